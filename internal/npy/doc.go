// Package npy reads and writes NumPy .npy arrays of f16 ('<f2') or f32
// ('<f4') in C order, the host-data format of `ipu run --input/--output`.
//
// A file is the magic "\x93NUMPY", a major and minor version byte (1.0: a
// u16 header length; 2.0 and 3.0: a u32, 3.0 allowing UTF-8), then a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
// (2, 3), } padded with spaces to a 64-byte boundary and ending in '\n',
// then the data. The reader parses exactly that dict grammar (no eval),
// bounds the header, and checks the data length against the shape before
// allocating.
package npy
