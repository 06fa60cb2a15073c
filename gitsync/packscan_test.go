package gitsync

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"
)

// packObject is one entry of a hand-built pack.
type packObject struct {
	typ     plumbing.ObjectType
	data    []byte
	ofsBase int // entry index of an ofs-delta's base
	refBase plumbing.Hash
}

// buildPack writes a version 2 pack of the objects.
func buildPack(t *testing.T, objs []packObject) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, uint32(len(objs))})
	offsets := make([]int64, len(objs))
	for i, o := range objs {
		offsets[i] = int64(b.Len())
		b.Write(appendTypeSize(nil, o.typ, int64(len(o.data))))
		switch o.typ {
		case plumbing.OFSDeltaObject:
			b.Write(appendOfsOffset(nil, offsets[i]-offsets[o.ofsBase]))
		case plumbing.REFDeltaObject:
			b.Write(o.refBase[:])
		}
		zw := zlib.NewWriter(&b)
		_, _ = zw.Write(o.data)
		must(t, zw.Close())
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// delta makes target from base: all of base, then the added bytes.
func delta(base []byte, added string) []byte {
	var d []byte
	d = binary.AppendUvarint(d, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(base)+len(added)))
	d = append(d, 0x80|0x10|0x20, byte(len(base)), byte(len(base)>>8)) // copy from 0, 2 size bytes
	for len(added) > 0 {
		n := min(len(added), 127)
		d = append(append(d, byte(n)), added[:n]...)
		added = added[n:]
	}
	return d
}

func blobHashOf(b []byte) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, b) }

// Objects over the limit are left out of the pack the store takes, with
// the deltas built on them or making one, and what stays is intact: the
// ofs-deltas after a dropped object point at their base anew.
func TestScanPackLeavesOutOversizedObjects(t *testing.T) {
	x := []byte("a small blob, kept as it is\n")
	big := []byte(strings.Repeat("z", 65))
	y := []byte("another small blob\n")
	objs := []packObject{
		{typ: plumbing.BlobObject, data: x},
		{typ: plumbing.BlobObject, data: big},                                               // over 64 bytes: dropped
		{typ: plumbing.OFSDeltaObject, ofsBase: 0, data: delta(x, "more\n")},                // kept, its offset moves
		{typ: plumbing.OFSDeltaObject, ofsBase: 1, data: delta(big, "!")},                   // on a dropped base
		{typ: plumbing.REFDeltaObject, refBase: blobHashOf(big), data: delta(big, "?")},     // on a dropped base, by hash
		{typ: plumbing.OFSDeltaObject, ofsBase: 0, data: delta(x, strings.Repeat("+", 40))}, // makes 68 bytes
		{typ: plumbing.BlobObject, data: y},
	}
	var received bytes.Buffer
	scan, err := scanPack(t.Context(), bytes.NewReader(buildPack(t, objs)), &received, limits{fileSize: 64})
	must(t, err)
	if scan.kept() != 3 || scan.droppedDeltas != 3 || scan.dropped[blobHashOf(big)] != 65 {
		t.Fatalf("kept %d, dropped deltas %d, dropped %v", scan.kept(), scan.droppedDeltas, scan.dropped)
	}
	var thin bytes.Buffer
	must(t, rewritePack(bytes.NewReader(received.Bytes()), scan, &thin))
	st := memory.NewStorage()
	must(t, packfile.UpdateObjectStorage(st, bytes.NewReader(thin.Bytes())))
	want := map[plumbing.Hash][]byte{blobHashOf(x): x, blobHashOf(y): y, blobHashOf(append(x, "more\n"...)): append(x, "more\n"...)}
	if len(st.Objects) != len(want) {
		t.Fatalf("the store holds %d objects, want %d", len(st.Objects), len(want))
	}
	for h, content := range want {
		obj, err := st.EncodedObject(plumbing.BlobObject, h)
		must(t, err)
		r, err := obj.Reader()
		must(t, err)
		got, err := io.ReadAll(r)
		must(t, err)
		if !bytes.Equal(got, content) {
			t.Fatalf("%s = %q, want %q", h, got, content)
		}
	}
}

// longPack is a pack whose one object inflates past its declared size.
func longPack() []byte {
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, [2]uint32{2, 1})
	b.Write(appendTypeSize(nil, plumbing.BlobObject, 3))
	zw := zlib.NewWriter(&b)
	_, _ = zw.Write([]byte("more than three"))
	_ = zw.Close()
	sum := sha1.Sum(b.Bytes())
	return append(b.Bytes(), sum[:]...)
}

// A pack that is not what it says is refused.
func TestScanPackRefusesMalformedPacks(t *testing.T) {
	good := buildPack(t, []packObject{{typ: plumbing.BlobObject, data: []byte("content\n")}})
	tests := []struct {
		name string
		pack []byte
		want string
	}{
		{"checksum", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1), "checksum mismatch"},
		{"cut short", good[:len(good)-25], "EOF"},
		{"no signature", append([]byte("KCAP"), good[4:]...), "no PACK signature"},
		{"data longer than its size", longPack(), "not 3"},
		{"an ofs-delta on itself", buildPack(t, []packObject{{typ: plumbing.OFSDeltaObject, ofsBase: 0, data: delta(nil, "x")}}), "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scanPack(t.Context(), bytes.NewReader(tt.pack), io.Discard, limitsOf(Options[any]{}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// The headers rewritePack writes read back as the scanner reads them.
func TestPackHeaderEncoding(t *testing.T) {
	reader := func(b []byte) *countingReader {
		return &countingReader{r: bufio.NewReader(bytes.NewReader(b)), sum: sha1.New()}
	}
	for _, n := range []int64{0, 1, 15, 16, 127, 128, 16511, 16512, 1 << 20, 1<<40 + 3} {
		e, _, err := readEntryHeader(reader(appendTypeSize(nil, plumbing.BlobObject, n)), &packScan{})
		if err != nil || e.size != n || e.typ != plumbing.BlobObject {
			t.Fatalf("size %d read back as %d (%v, %v)", n, e.size, e.typ, err)
		}
		if n == 0 {
			continue
		}
		if got, err := readOfsOffset(reader(appendOfsOffset(nil, n))); err != nil || got != n {
			t.Fatalf("offset %d read back as %d (%v)", n, got, err)
		}
	}
}
