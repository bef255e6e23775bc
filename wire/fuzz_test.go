package wire

import (
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecode checks that Decode never panics, that each error it returns
// wraps one of the package's sentinels, and that whatever it accepts
// re-encodes to a message that decodes the same.
func FuzzDecode(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(captureDir, "*.hex"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no captures in %s: %v", captureDir, err)
	}
	for _, path := range paths {
		frame, err := parseCapture(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := Decode(frame)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode of a decoded message: %v", err)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("Decode of the re-encoded message: %v\n%x", err, again)
		}
		// Recompression may change the length, and a noop-compressed
		// message comes back unwrapped.
		if parseHeader(frame).OpCode == OpCompressed {
			m.Header.Length, m2.Header.Length = 0, 0
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message\n got %+v\nwant %+v", m2, m)
		}
	})
}
