# ipuexe: the ipustack application package for the Graphcore IPU21.
#
# This is the wire schema only. The Go model lives in package ipuexe
# (plain structs); ipuexe/encode.go and decode.go convert between the two
# and ipuexe/validate.go holds every rule a loadable package must meet.
# A file is the 56-byte ipuexe header (magic, format version, content
# length, SHA-256) followed by one unpacked Cap'n Proto message whose root
# is Package. The header layout is in the ipuexe package comment.
#
# Compatibility: fields are only ever appended (new ordinals); a change in
# meaning of an existing field bumps formatVersion instead.

@0xdf02522a5e7c14d1;

using Go = import "/go.capnp";
$Go.package("schema");
$Go.import("github.com/ipustack/ipustack/ipuexe/schema");

struct Package {
  formatVersion @0 :UInt32;   # repeats the header's version; must agree
  compilerVersion @1 :Text;
  target @2 :Text;            # target.Lookup name, e.g. "ipu21"
  memoryBase @3 :UInt32;      # tile SRAM base the package was built for
  memorySize @4 :UInt32;      # tile SRAM size in bytes
  tiles @5 :List(Tile);
  # Initialised segment bytes, stored once however many segments use them
  # (the runtime's code is identical on every tile). Segment.blob indexes
  # this list, plus one.
  blobs @6 :List(Data);
  inputs @7 :List(Binding);
  outputs @8 :List(Binding);
  weights @9 :List(Binding);
  host @10 :HostExchange;
  config @11 :List(ConfigWrite);  # device configuration, replayed in order
  profile @12 :Profile;
  symbols @13 :List(Symbol);      # debug symbols valid on every tile
  # How the package was built (workload, shape flags, tiles, seed ...), as
  # the compiler wrote it (JSON): lets a run regenerate the same inputs and
  # host reference. Opaque to the reader.
  recipe @14 :Text;
  # What a run needs besides the images and the host plan, so that running
  # a package never asks the compiler: the metrics' workload, assumption
  # set and flops, the plan summary, the exchange phases' schedules and the
  # memory maps a profile shows. Empty in packages written before it.
  run @15 :RunInfo;
}

struct RunInfo {
  workload @0 :Text;          # full workload name, as the metrics line prints it
  # The emulator assumption set the package is correct under, by its name
  # ("amp-state-retained", "conservative"; empty: the default set).
  assumptions @1 :Text;
  flops @2 :UInt64;           # floating-point operations of one "run" call
  plan @3 :PlanSummary;
  phases @4 :List(ExchangePhase);
  # Distinct tile memory maps; Tile.memoryMap indexes this list, plus one.
  memoryMaps @5 :List(MemoryMap);
  # Distinct sampled-step descriptions; ProfileSample.detail indexes this
  # list, plus one.
  stepDetails @6 :List(StepDetail);
}

struct PlanSummary {
  predictedCycles @0 :UInt64;
  gemms @1 :List(PlanGemm);
  finalists @2 :List(PlanFinalist);
}

struct PlanGrid {
  rows @0 :UInt32;
  cols @1 :UInt32;
  inner @2 :UInt32;           # K-split parts
}

struct PlanGemm {
  name @0 :Text;
  m @1 :UInt32;
  k @2 :UInt32;
  n @3 :UInt32;
  grid @4 :PlanGrid;
  tiles @5 :UInt32;
  kernel @6 :Text;
}

struct PlanFinalist {
  rank @0 :UInt32;
  midCycles @1 :UInt64;
  lowCycles @2 :UInt64;
  grids @3 :List(PlanGrid);   # one per PlanSummary.gemms entry
  chosen @4 :Bool;
}

# One device exchange phase as scheduled into the package's exchange rows.
struct ExchangePhase {
  id @0 :UInt32;
  name @1 :Text;
  horizon @2 :UInt64;         # scheduled length in cycles
  bound @3 :UInt64;           # endpoint lower bound in cycles
  schedule @4 :Text;          # "full-duplex", "paired"
  windows @5 :List(PhaseWindow);
}

# A tile's traffic in a phase, cycles from the phase start.
struct PhaseWindow {
  tile @0 :UInt32;            # physical id
  sendStart @1 :UInt32;
  sendEnd @2 :UInt32;
  recvStart @3 :UInt32;
  recvEnd @4 :UInt32;
  sendBytes @5 :UInt32;
  recvBytes @6 :UInt32;
}

struct MemoryMap {
  ranges @0 :List(MemoryRange);
}

struct MemoryRange {
  kind @0 :Text;              # "code", "exchange-rows", "weights", "activations", "partials", "free"
  address @1 :UInt32;
  size @2 :UInt32;
  name @3 :Text;
}

# What a sampled step is: its kernel, exchange phase and provenance.
struct StepDetail {
  kernel @0 :Text;
  phase @1 :Int32;            # exchange phase id; -1 for none
  operation @2 :Text;
  value @3 :Text;
  reason @4 :Text;
}

# Element orders of a layout block.
enum ElementOrder {
  rowMajor @0;                # [rows][cols]
  ampLeft @1;                 # per 16-column group, every row's 16 values
  ampRight @2;                # 16x16 blocks, column-group major, 16 inner values per column
  ampOut @3;                  # byte for byte ampLeft
}

# A rectangle of the host tensor's matrix (rows x cols: the tensor's last
# dimension is cols, the others rows) held from byte offset on in the
# packed binding, in padded coordinates (columns padded to 16 for AMP
# orders; rows past the matrix are padding rows): elements at rows >=
# rowEnd or cols >= colEnd are padding (zero in inputs, ignored in
# outputs). rowEnd = rowLo (or colEnd = colLo): padding only.
struct Block {
  offset @0 :UInt64;
  rowLo @1 :UInt32;
  rowHi @2 :UInt32;
  colLo @3 :UInt32;
  colHi @4 :UInt32;
  rowEnd @5 :UInt32;
  colEnd @6 :UInt32;
  order @7 :ElementOrder;
}

struct Tile {
  physical @0 :UInt32;        # physical tile id
  entry @1 :UInt32;           # supervisor entry point
  segments @2 :List(Segment);
  symbols @3 :List(Symbol);   # debug symbols of this tile only
  memoryMap @4 :UInt32;       # 0: none; n: run.memoryMaps[n-1]
}

struct Segment {
  address @0 :UInt32;
  memorySize @1 :UInt32;      # bytes occupied; past the blob's length they are zero
  flags @2 :UInt8;            # bit 0 read, bit 1 write, bit 2 execute
  blob @3 :UInt32;            # 0: no initialised bytes; n: blobs[n-1]
}

struct Symbol {
  name @0 :Text;
  address @1 :UInt32;
  size @2 :UInt32;
}

struct Binding {
  name @0 :Text;
  dtype @1 :Text;             # "f16", "f32", ... (ipuexe.DType)
  shape @2 :List(UInt32);
  slices @3 :List(Slice);
  # The host tensor's own shape (the graph's, e.g. [tokens, dim] or a
  # weight's [in, out]), which shape above (the packed layout's) does not
  # show; what `ipu inspect` lists and `ipu run --weights/--input` are
  # checked against. Empty in packages written before it was added.
  tensorShape @4 :List(UInt32);
  # How the packed bytes hold the tensor: blocks covering them exactly, every
  # real element in at least one (a block may repeat another's elements).
  # The host packs and unpacks from this alone. Empty in packages written
  # before it was added.
  layout @5 :List(Block);
}

# A byte range of a tensor placed on one tile.
struct Slice {
  tile @0 :UInt32;            # physical id
  address @1 :UInt32;
  offset @2 :UInt64;          # byte offset in the tensor
  length @3 :UInt32;
}

struct HostExchange {
  pages @0 :List(HostPage);
  commandPage @1 :UInt32;     # page index holding the command word
  commandOffset @2 :UInt32;   # byte offset of the command word in that page
  slotSize @3 :UInt32;        # bytes one tile may use in one page per phase
  calls @4 :List(HostCall);
}

struct HostPage {
  index @0 :UInt32;
  size @1 :UInt32;
}

struct HostCall {
  name @0 :Text;
  command @1 :UInt32;         # value the host writes to the command word
  phases @2 :List(HostPhase);
}

# One host/device rendezvous (a handshake on a global sync).
struct HostPhase {
  transfers @0 :List(HostTransfer);
}

enum BindingKind {
  input @0;
  output @1;
  weight @2;
}

# Part of one binding slice moved through a page in one phase. Inputs and
# weights go host -> tile, outputs tile -> host.
struct HostTransfer {
  kind @0 :BindingKind;
  binding @1 :UInt32;         # index in inputs/outputs/weights
  slice @2 :UInt32;           # index in that binding's slices
  sliceOffset @3 :UInt32;     # byte offset inside the slice
  length @4 :UInt32;
  page @5 :UInt32;            # HostPage.index
  pageOffset @6 :UInt32;
}

struct ConfigWrite {
  offset @0 :UInt32;
  value @1 :UInt32;
}

struct Profile {
  steps @0 :List(ProfileStep);
  tiles @1 :List(TileProfile);
}

struct ProfileStep {
  name @0 :Text;
  kind @1 :Text;              # "exchange", "compute", "sync", ...
}

struct TileProfile {
  tile @0 :UInt32;            # physical id
  samples @1 :List(ProfileSample);
}

# A word where the tile stores its cycle counter when step `step` ends.
struct ProfileSample {
  address @0 :UInt32;
  step @1 :UInt32;            # index in Profile.steps
  detail @2 :UInt32;          # 0: none; n: run.stepDetails[n-1] (the step this sample ends)
}
