//go:build linux

package c600

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// realCard is an opened /dev/ipuN: the file descriptor, the mapped
// configuration window and one page of anonymous memory for ioctl
// arguments that the kernel reads through pointers (mmap'd, so its address
// is stable and outside the Go heap).
type realCard struct {
	node    string
	fd      int
	window  []byte
	scratch []byte
}

// OpenCard opens the real card at node: the device node O_RDWR|O_CLOEXEC,
// the configuration window mapped shared, and an argument page.
func OpenCard(node string) (Card, error) {
	fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("c600: no %s: there is no IPU card on this machine (use --device emu)", node)
		}
		return nil, fmt.Errorf("c600: opening %s: %w", node, &os.PathError{Op: "open", Path: node, Err: err})
	}
	w, err := unix.Mmap(fd, 0, WindowSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("c600 %s: mapping the %#x-byte configuration window: %w", node, WindowSize, err)
	}
	s, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		unix.Munmap(w)
		unix.Close(fd)
		return nil, fmt.Errorf("c600 %s: ioctl argument page: %w", node, err)
	}
	return &realCard{node: node, fd: fd, window: w, scratch: s}, nil
}

func (c *realCard) check(off uint32) error {
	if off%4 != 0 || uint64(off)+4 > WindowSize {
		return fmt.Errorf("configuration window offset %#x: want a 4-aligned offset below %#x", off, WindowSize)
	}
	return nil
}

// read and write are volatile 32-bit accesses: atomic operations are never
// elided or merged by the compiler. The window is little-endian and so is
// every machine this driver targets (amd64, arm64).
func (c *realCard) ReadRegister(off uint32) (uint32, error) {
	if err := c.check(off); err != nil {
		return 0, err
	}
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&c.window[off]))), nil
}

func (c *realCard) WriteRegister(off, v uint32) error {
	if err := c.check(off); err != nil {
		return err
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&c.window[off])), v)
	return nil
}

// ioctl issues one request with every signal blocked in the calling
// thread (IPU21.md: the reference blocks signals around device calls).
func (c *realCard) Ioctl(req uint32, arg uint64) error { return c.ioctl(uintptr(req), uintptr(arg)) }

func (c *realCard) ioctl(req uintptr, arg uintptr) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return fmt.Errorf("blocking signals: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), req, arg)
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
		return fmt.Errorf("restoring the signal mask: %w", err)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func (c *realCard) base() uintptr { return uintptr(unsafe.Pointer(&c.scratch[0])) }

// mailbox: the argument is {u64 request pointer, u64 response pointer},
// each pointing at five u32 words; all three live in the scratch page.
func (c *realCard) Mailbox(req [5]uint32) ([5]uint32, error) {
	clear(c.scratch)
	le := binary.LittleEndian
	for i, w := range req {
		le.PutUint32(c.scratch[16+4*i:], w)
	}
	le.PutUint64(c.scratch[0:], uint64(c.base()+16))
	le.PutUint64(c.scratch[8:], uint64(c.base()+48))
	var resp [5]uint32
	if err := c.ioctl(IoctlMailboxWriteRead, c.base()); err != nil {
		return resp, err
	}
	for i := range resp {
		resp[i] = le.Uint32(c.scratch[48+4*i:])
	}
	return resp, nil
}

// setSecondaryID passes a pointer to the id (8 bytes are zeroed: the
// request's size field is 8).
func (c *realCard) SetSecondaryID(id uint32) error {
	clear(c.scratch[:8])
	binary.LittleEndian.PutUint32(c.scratch, id)
	return c.ioctl(IoctlSetSecondaryIPUID, c.base())
}

func (c *realCard) Close() error {
	return errors.Join(unix.Munmap(c.scratch), unix.Munmap(c.window), unix.Close(c.fd))
}

// HostMemory maps anonymous shared memory: page-aligned, outside the Go
// heap, so its address is stable while the card holds it.
func (c *realCard) HostMemory(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("host memory of %d bytes", size)
	}
	pg := unix.Getpagesize()
	m, err := unix.Mmap(-1, 0, (size+pg-1)/pg*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes of host memory: %w", size, err)
	}
	return m[:size], nil
}

func (c *realCard) FreeHostMemory(mem []byte) error {
	if cap(mem) == 0 {
		return nil
	}
	return unix.Munmap(mem[:cap(mem)])
}

// AttachBuffer: the argument is {u32 index, u32 size, u64 address} in the
// scratch page.
func (c *realCard) AttachBuffer(index uint32, mem []byte) error {
	if len(mem) == 0 || uint64(len(mem)) > 1<<32-1 {
		return fmt.Errorf("buffer %d: %d bytes: want 1 to 2^32-1", index, len(mem))
	}
	clear(c.scratch[:16])
	le := binary.LittleEndian
	le.PutUint32(c.scratch[0:], index)
	le.PutUint32(c.scratch[4:], uint32(len(mem)))
	le.PutUint64(c.scratch[8:], uint64(uintptr(unsafe.Pointer(&mem[0]))))
	return c.ioctl(IoctlBufferAttach, c.base())
}
