# profile: the ipustack run profile of an IPU21 application.
#
# This is the wire schema only. The Go model lives in package profile
# (plain structs); profile/encode.go and decode.go convert between the two
# and profile/validate.go holds every rule a profile must meet. A file is
# the 56-byte profile header (magic "IPUPROF\0", format version, content
# length, SHA-256) followed by one unpacked Cap'n Proto message whose root
# is Profile.
#
# Compatibility: fields are only ever appended (new ordinals); a change in
# meaning of an existing field bumps formatVersion instead.

@0xb6c1f0a3d2e45879;

using Go = import "/go.capnp";
$Go.package("schema");
$Go.import("github.com/ipustack/ipustack/profile/schema");

struct Profile {
  formatVersion @0 :UInt32;   # repeats the header's version; must agree
  workload @1 :Text;          # e.g. "siglip-mlp-f16-b1-t729-d1152-h4304-n1"
  target @2 :Text;            # target name, e.g. "ipu21"
  clockHz @3 :UInt64;         # tile clock, for converting cycles to time
  cycles @4 :UInt64;          # length of the profiled span (every step ends by then)
  samples @5 :UInt64;         # cycle samples the run read to make this profile
  synthetic @6 :Bool;         # made by profile.Synthetic, not by a run
  # Kernel names, operation names, values and reasons, stored once.
  # Index 0 is always the empty string.
  strings @7 :List(Text);
  tiles @8 :List(Tile);       # index = logical tile id
  phases @9 :List(Phase);
  plan @10 :Plan;
}

struct Tile {
  steps @0 :List(Step);       # by start cycle, not overlapping
  memory @1 :List(MemorySegment);  # by address, not overlapping
}

enum Kind {
  idle @0;
  compute @1;
  exchange @2;
  sync @3;
  host @4;
}

# One step of one tile's program: [start, end) in cycles from the profiled
# span's start.
struct Step {
  start @0 :UInt64;
  end @1 :UInt64;
  kind @2 :Kind;
  phase @3 :Int32;            # exchange phase id, or -1
  kernel @4 :UInt32;          # strings index: kernel run ("" if none)
  operation @5 :UInt32;       # strings index: graph operation the work serves
  value @6 :UInt32;           # strings index: value (piece) produced or moved
  reason @7 :UInt32;          # strings index: why the work exists
}

# One compiled exchange phase: its schedule and the windows every tile
# sends and receives in, relative to the phase's start.
struct Phase {
  id @0 :UInt32;
  name @1 :Text;
  start @2 :UInt64;           # cycle the phase's schedule starts
  horizon @3 :UInt64;         # scheduled length in cycles
  bound @4 :UInt64;           # endpoint lower bound in cycles
  schedule @5 :Text;          # "full-duplex", "paired", ...
  windows @6 :List(Window);   # tiles with traffic, by tile
}

struct Window {
  tile @0 :UInt32;
  sendStart @1 :UInt32;       # send window [sendStart, sendEnd); empty: no sends
  sendEnd @2 :UInt32;
  recvStart @3 :UInt32;       # receive window [recvStart, recvEnd)
  recvEnd @4 :UInt32;
  sendBytes @5 :UInt32;
  recvBytes @6 :UInt32;
}

enum SegmentKind {
  code @0;
  exchangeRows @1;
  weights @2;
  activations @3;
  partials @4;
  free @5;
}

struct MemorySegment {
  kind @0 :SegmentKind;
  address @1 :UInt32;
  size @2 :UInt32;
  name @3 :UInt32;            # strings index
}

struct Plan {
  predictedCycles @0 :UInt64; # the chosen plan's predicted cycles
  gemms @1 :List(Gemm);
  finalists @2 :List(Finalist);
}

struct Grid {
  rows @0 :UInt32;
  cols @1 :UInt32;
  inner @2 :UInt32;           # K-split
}

struct Gemm {
  name @0 :Text;
  m @1 :UInt32;
  k @2 :UInt32;
  n @3 :UInt32;
  grid @4 :Grid;
  tiles @5 :UInt32;
  kernel @6 :Text;
}

# One finalist of the planner: a whole-graph plan ranked by its mid-level
# estimate and re-ranked by its placed, scheduled (low-level) cycles.
struct Finalist {
  rank @0 :UInt32;
  midCycles @1 :UInt64;
  lowCycles @2 :UInt64;
  grids @3 :List(Grid);       # one per Plan.gemms entry
  chosen @4 :Bool;
}
