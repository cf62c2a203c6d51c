package c600

// Facts from IPU21.md, "The C600 host interface".
const (
	// WindowSize is the configuration register window mapped at offset 0.
	WindowSize = 0x80000

	// ioctl requests (magic 0xED).
	ioctlUserAttach        = 0xC008ED0A
	ioctlSetIPUID          = 0xC008ED0E
	ioctlMailboxWriteRead  = 0xC008ED1F
	ioctlStopMonitoring    = 0xED22
	ioctlStartMonitoring   = 0xED23
	ioctlAccumulateErrors  = 0xED24
	ioctlResetDevice       = 0x4004ED2D
	ioctlSetSecondaryIPUID = 0x4008ED2F

	// mailboxReset is the request word of the initialisation mailbox
	// check; the response's high 16 bits must equal its high 16 bits.
	mailboxReset = 0x4078020E

	// Registers (window offsets).
	regHSPGS1 = 0x302C
	regHSPGS2 = 0x3030
	hspMark   = 0xFFFF // the mark is the low 16 bits
)

// DefaultNode is the card Open uses when the device name has no node.
const DefaultNode = "/dev/ipu0"

// Autoloader and bootloader facts (IPU21.md, "Load").
const (
	regAutoldCSR    = 0x2068
	regAutoldTarget = 0x206C
	regAutoldData   = 0x2070

	autoldGo          = 1 << 8
	autoldDataPresent = 1 << 20
	autoldTileShift   = 9
	autoldPointerMask = 0x3F
	autoldZone        = 32 << 20
	autoldKiBShift    = 10

	// BootloaderBase is where the SDK's tile bootloader's one segment
	// loads; BootloaderMax its largest size.
	BootloaderBase = 0x4C000
	BootloaderMax  = 4096
)
