// Package safetensors reads Hugging Face safetensors checkpoints: an 8-byte
// little-endian header length n, n bytes of JSON header mapping each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative
// to the byte after the header; an optional "__metadata__" map of strings),
// then the tensor data.
//
// The reader trusts nothing in the header: the header length is bounded,
// every tensor's byte range must lie inside the file, match dtype x shape
// exactly and not overlap another's, and nothing is allocated from a size
// the header claims until that size is checked against the file's. Tensor
// data is read on demand (ReadAt), so a checkpoint of gigabytes is not
// loaded whole to take one layer.
package safetensors
