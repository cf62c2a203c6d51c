package c600

// Card is what the driver needs of an opened card: 32-bit accesses to the
// configuration window, the ioctls, and host memory it can attach as a
// buffer the card reads and writes. The real card (OpenCard, Linux) is one
// implementation; the card model (device/c600model) is another.
type Card interface {
	// ReadRegister and WriteRegister are volatile 32-bit little-endian
	// accesses at a 4-aligned offset inside the WindowSize-byte window.
	ReadRegister(off uint32) (uint32, error)
	WriteRegister(off, v uint32) error
	// Ioctl issues a request whose argument is a value (0 for most; the
	// index for IoctlBufferDetach).
	Ioctl(req uint32, arg uint64) error
	// Mailbox is IoctlMailboxWriteRead: five request words, five
	// response words.
	Mailbox(req [5]uint32) ([5]uint32, error)
	// SetSecondaryID is IoctlSetSecondaryIPUID with a pointer to id.
	SetSecondaryID(id uint32) error
	// HostMemory returns size zeroed bytes the card can attach: stable,
	// page-aligned, outside the Go heap on a real card.
	HostMemory(size int) ([]byte, error)
	// FreeHostMemory releases memory HostMemory returned.
	FreeHostMemory(mem []byte) error
	// AttachBuffer is IoctlBufferAttach: mem becomes buffer index.
	AttachBuffer(index uint32, mem []byte) error
	// Close releases the card.
	Close() error
}

// Opener opens the card at a device node.
type Opener func(node string) (Card, error)
