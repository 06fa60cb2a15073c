package executor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxResultFile bounds a file a hook hands back (its values and config
// patches, MODULE_ENABLED_RESULT, its Kubernetes patches and metrics): the
// same 1 MiB as a hook's --config output (docs/security.md, "Limits").
const MaxResultFile = 1 << 20

// ReadResultFile reads a file a hook was given the path of and may have
// replaced: a link is not followed, a FIFO or device does not block the
// read (it is refused), and a regular file over limit is refused without
// being read. A limit of zero means MaxResultFile. Errors do not name the
// file: the caller names the hook and the variable.
func ReadResultFile(path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = MaxResultFile
	}
	// O_NONBLOCK: opening a FIFO with no writer would otherwise wait for
	// one for ever; the kind is checked on the open file, so a swap after
	// a check cannot slip another file in
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("is a symbolic link, not a regular file")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file (%s)", info.Mode().Type())
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%d bytes, over the limit of %d bytes", info.Size(), limit)
	}
	// the hook's orphans may still write to it: read one byte past the
	// bound to see it grew
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("over the limit of %d bytes", limit)
	}
	return buf.Bytes(), nil
}
