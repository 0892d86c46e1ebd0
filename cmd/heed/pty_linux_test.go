//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// ioctl calls ioctl(2) on f with a pointer argument.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// openPTY opens a pseudo-terminal as posix_openpt, unlockpt and ptsname
// do, and returns its two sides. The terminal side passes output through
// as written (no OPOST: '\n' stays '\n'), so that the test reads exactly
// the bytes the program wrote.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	c, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n uint32
	require.NoError(t, ioctl(c, syscall.TIOCGPTN, unsafe.Pointer(&n)))
	var unlock int32
	require.NoError(t, ioctl(c, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)))
	tt, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	var tio syscall.Termios
	require.NoError(t, ioctl(tt, syscall.TCGETS, unsafe.Pointer(&tio)))
	tio.Oflag &^= syscall.OPOST
	require.NoError(t, ioctl(tt, syscall.TCSETS, unsafe.Pointer(&tio)))
	return c, tt
}

// runOnTerminal runs the binary with a pseudo-terminal as its stderr (and
// TERM=xterm), stdout to a buffer, and returns what each received.
func runOnTerminal(t *testing.T, bin string, args ...string) result {
	t.Helper()
	controller, terminal := openPTY(t)
	defer controller.Close()
	var stdout syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TERM=xterm")
	cmd.Stdout, cmd.Stderr = &stdout, terminal
	start := time.Now()
	require.NoError(t, cmd.Start())
	terminal.Close() // the child holds its own copy

	// Read the terminal until the child's side is gone (EIO).
	read := make(chan []byte)
	go func() {
		var got []byte
		buf := make([]byte, 4096)
		for {
			n, err := controller.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				read <- got
				return
			}
		}
	}()
	timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	r := result{stdout: stdout.String(), stderr: string(<-read), took: time.Since(start), code: exitCode(t, err)}
	t.Logf("heed %q on a terminal: exit %d in %s\nstdout: %q\nterminal: %q", args, r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}
