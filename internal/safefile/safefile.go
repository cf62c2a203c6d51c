package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path safely (see the package comment).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes the output produced by write to path safely. write may fail
// half way; the previous content of path, if any, is then kept. Errors name
// path, never the temporary file.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) error {
	target, special, err := resolve(path)
	if err != nil {
		return err
	}
	if special {
		return writeDirect(path, target, write)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: cannot create a file in %s: %w", path, dir, Cause(err))
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	if err := os.Rename(name, target); err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	return nil
}

// Check reports, before any work is done, an output path that Write would
// refuse: a directory, a missing or non-directory parent.
func Check(path string) error {
	target, special, err := resolve(path)
	if err != nil || special {
		return err
	}
	dir := filepath.Dir(target)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("output %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("output %s: %w", path, Cause(err))
	case !fi.IsDir():
		return fmt.Errorf("output %s: %s is not a directory", path, dir)
	}
	return nil
}

// resolve follows path's symlinks to the file to replace and says whether
// it is a special file (device, FIFO, socket) to be written in place.
func resolve(path string) (target string, special bool, err error) {
	target = path
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// A new name (Check then reports a parent that is no directory).
		return path, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("output %s: %w", path, Cause(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// EvalSymlinks fails on a dangling link; follow it by hand
		// (relative targets are relative to the link's directory), so
		// that writing through a dangling link creates its target.
		for hops := 0; fi.Mode()&fs.ModeSymlink != 0; hops++ {
			if hops == 40 {
				return "", false, fmt.Errorf("output %s: too many levels of symbolic links", path)
			}
			link, err := os.Readlink(target)
			if err != nil {
				return "", false, fmt.Errorf("output %s: %w", path, Cause(err))
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(target), link)
			}
			target = link
			fi, err = os.Lstat(target)
			if errors.Is(err, fs.ErrNotExist) {
				return target, false, nil
			}
			if err != nil {
				return "", false, fmt.Errorf("output %s: %w", path, Cause(err))
			}
		}
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return "", false, fmt.Errorf("output %s is a directory; give a file name", path)
	case m.IsRegular():
		return target, false, nil
	default:
		return target, true, nil
	}
}

// writeDirect writes to a device node, FIFO or socket in place.
func writeDirect(path, target string, write func(io.Writer) error) error {
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, Cause(err))
	}
	return nil
}

// Cause strips the operation and (temporary) path from an *fs.PathError or
// *os.LinkError, leaving e.g. "no space left on device".
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
