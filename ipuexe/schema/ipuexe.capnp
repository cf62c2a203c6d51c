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
}

struct Tile {
  physical @0 :UInt32;        # physical tile id
  entry @1 :UInt32;           # supervisor entry point
  segments @2 :List(Segment);
  symbols @3 :List(Symbol);   # debug symbols of this tile only
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
}
