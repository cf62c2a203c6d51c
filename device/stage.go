package device

import "fmt"

// Stage is where a Device is in the life cycle every backend follows:
// Open, Initialize, ReplayConfig, Load, StartSession (and the session's
// Close back to loaded), Close. Backends keep one and check it with Need,
// so a call out of order is the same error whichever backend refuses it.
type Stage uint8

const (
	StageNew Stage = iota
	StageOpen
	StageInitialized
	StageLoaded
	StageSession
	StageClosed
)

var stageNames = [...]string{"new", "open", "initialized", "loaded", "in a session", "closed"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("stage %d", uint8(s))
}

// Need returns nil when s is one of want, else "OP: the device is S".
func (s Stage) Need(op string, want ...Stage) error {
	for _, w := range want {
		if s == w {
			return nil
		}
	}
	return fmt.Errorf("%s: the device is %s", op, s)
}

// BackendOptions returns a backend's Options.Backend value as T: nil gives
// T's zero value, a T or a non-nil *T gives that T. Anything else is an
// error naming the backend and the type it wants.
func BackendOptions[T any](backend string, b any) (T, error) {
	var o T
	switch v := b.(type) {
	case nil:
	case T:
		o = v
	case *T:
		if v != nil {
			o = *v
		}
	default:
		return o, fmt.Errorf("%s backend options must be %T, not %T", backend, o, b)
	}
	return o, nil
}
