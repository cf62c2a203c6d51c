package c600

// Facts from IPU21.md, "The C600 host interface". They are exported for
// the card model (device/c600model), which answers the same registers and
// requests.
const (
	// WindowSize is the configuration register window mapped at offset 0.
	WindowSize = 0x80000

	// ioctl requests (magic 0xED).
	IoctlUserAttach        = 0xC008ED0A
	IoctlBufferAttach      = 0xC008ED0B // {u32 index, u32 size, u64 address}
	IoctlBufferDetach      = 0xC008ED0C // the index, by value
	IoctlSetIPUID          = 0xC008ED0E
	IoctlBufferDetachAll   = 0xED12
	IoctlMailboxWriteRead  = 0xC008ED1F
	IoctlStopMonitoring    = 0xED22
	IoctlStartMonitoring   = 0xED23
	IoctlAccumulateErrors  = 0xED24
	IoctlResetDevice       = 0x4004ED2D
	IoctlSetSecondaryIPUID = 0x4008ED2F

	// MailboxReset is the request word of the initialisation mailbox
	// check; the response's high 16 bits must equal its high 16 bits.
	MailboxReset = 0x4078020E

	// Registers (window offsets).
	RegCCSR     = 0x2000
	CCSRNoSnoop = 1 << 1
	CCSRECRC    = 1 << 10

	RegHSPGS1 = 0x302C
	RegHSPGS2 = 0x3030
	HSPMark   = 0xFFFF // the mark is the low 16 bits

	// RegExchangeWindowBase is written HEXOPT before every buffer attach.
	RegExchangeWindowBase = 0x3044
	ExchangeWindowHEXOPT  = 1 << 11
)

// DefaultNode is the card Open uses when the device name has no node.
const DefaultNode = "/dev/ipu0"

// Autoloader and bootloader facts (IPU21.md, "Load").
const (
	RegAutoldCSR    = 0x2068
	RegAutoldTarget = 0x206C
	RegAutoldData   = 0x2070

	AutoldGo          = 1 << 8
	AutoldDataPresent = 1 << 20
	AutoldTileShift   = 9
	AutoldPointerMask = 0x3F
	AutoldZone        = 32 << 20
	AutoldKiBShift    = 10

	// BootloaderBase is where the SDK's tile bootloader's one segment
	// loads; BootloaderMax its largest size.
	BootloaderBase = 0x4C000
	BootloaderMax  = 4096
)

// Exchange-buffer request-ID controls: XBCount instances, 0..7 at
// 0x5404 + i*0x400, 8..15 at 0x1B804 + (i-8)*0x400.
const (
	XBCount = 16
	// XBParkID is the id every control is parked at during setup.
	XBParkID = 0x3F
)

// XBAddress is the window offset of exchange buffer i's request-ID control.
func XBAddress(i int) uint32 {
	if i < 8 {
		return 0x5404 + uint32(i)*0x400
	}
	return 0x1B804 + uint32(i-8)*0x400
}

// XBControl is the control value for request id id:
// 2 | id<<3 | id<<9 | id<<15 | id<<21 (id is 6 bits).
func XBControl(id uint32) uint32 {
	id &= 0x3F
	return 2 | id<<3 | id<<9 | id<<15 | id<<21
}

// XBOperational is the request id exchange buffer i runs with outside
// loading: 0 for the primary interface's eight, 1 for the secondary's (the
// reference driver's values; IPU21.md says only "restore").
func XBOperational(i int) uint32 { return uint32(i / 8) }

// The tile debug interface: register reg of tile t is at
// TDIBase + t*TDITileStride + reg*4.
const (
	TDIBase       = 0x30000
	TDITileStride = 0x40

	TDIContextStatus = 0 // 2 bits a context: 2 or 3 is stopped
	TDIRunBreak      = 1 // bit c stops context c
	TDIInstruction   = 3 // writing it executes the word
	TDIOwner         = 4 // the context an instruction runs in
	TDIExceptionClr  = 6
	TDIData          = 7
	TDIStatus        = 8 // bit 3 busy; bits 0-2 an error
	TDIStatusClear   = 9

	TDIStatusBusy  = 1 << 3
	TDIStatusError = 0x7

	// Instruction words the driver injects (the reference driver's
	// diagnostic words, named by their assembly): $mR = debug data,
	// debug data = $mR, $m0 = [$m1].
	TDIGetMDebugData = 0x41000070 // | r<<16
	TDIPutDebugDataM = 0x43008070 // | r<<20
	TDILoadM0FromM1  = 0x01F01000
)

// TDIAddress is the window offset of tile debug register reg of tile.
func TDIAddress(tile int, reg uint32) uint32 {
	return TDIBase + uint32(tile)*TDITileStride + reg*4
}
