package gitsync

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// receivePack stores the pack a fetch receives. The pack is scanned as it
// arrives (scanPack) into a file beside the store, within its budgets;
// when objects are over the limits it is rewritten without them, so that
// go-git's indexer, which holds each object whole in memory, never meets
// one. Only then does the store take it (storePack). Errors while
// receiving are the remote's; errors while storing are the store's
// (damaged), but for the sync's context ending.
func (f *fetcher) receivePack(ctx context.Context, r io.Reader) error {
	tmp, err := os.CreateTemp(f.dir, ".pack-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	out := bufio.NewWriterSize(tmp, 64<<10)
	scan, err := scanPack(ctx, r, out, f.limits)
	if err != nil {
		return fmt.Errorf("receive the pack: %w", err)
	}
	if err := out.Flush(); err != nil {
		return err
	}
	f.dropped.note(scan)
	if scan.kept() == 0 {
		return nil
	}
	pack := tmp
	if err := tmp.Truncate(scan.length); err != nil { // what the reader had buffered past the pack
		return err
	}
	if scan.nDropped > 0 {
		f.logger.Warn("objects over the size limit left out of the fetched pack",
			"objects", scan.nDropped, "limit", size(f.limits.fileSize))
		thin, err := os.CreateTemp(f.dir, ".pack-")
		if err != nil {
			return err
		}
		defer os.Remove(thin.Name())
		defer thin.Close()
		if err := rewritePack(tmp, scan, thin); err != nil {
			return err
		}
		pack = thin
	}
	return f.store.storePack(ctx, pack)
}

// rewritePack copies the kept entries of the scanned pack in src to dst:
// the same compressed data, each header written anew (an ofs-delta's
// distance to its base changes when objects between them are left out),
// then the new object count's header and checksum.
func rewritePack(src io.ReaderAt, scan *packScan, dst io.Writer) error {
	sum := sha1.New()
	bw := bufio.NewWriterSize(dst, 64<<10)
	w := io.MultiWriter(bw, sum)
	var head [12]byte
	copy(head[:4], "PACK")
	binary.BigEndian.PutUint32(head[4:8], scan.version)
	binary.BigEndian.PutUint32(head[8:12], uint32(scan.kept()))
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	pos := int64(len(head))
	newOffset := make([]int64, len(scan.entries))
	for i, e := range scan.entries {
		if e.drop {
			continue
		}
		newOffset[i] = pos
		hdr := appendTypeSize(nil, e.typ, e.size)
		switch e.typ {
		case plumbing.OFSDeltaObject:
			hdr = appendOfsOffset(hdr, pos-newOffset[scan.index(e.baseOffset)])
		case plumbing.REFDeltaObject:
			base := scan.refBases[i]
			hdr = append(hdr, base[:]...)
		}
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		n, err := io.Copy(w, io.NewSectionReader(src, e.dataOffset, scan.end(i)-e.dataOffset))
		if err != nil {
			return err
		}
		pos += int64(len(hdr)) + n
	}
	if _, err := bw.Write(sum.Sum(nil)); err != nil {
		return err
	}
	return bw.Flush()
}

// appendTypeSize encodes an object header's type and size.
func appendTypeSize(b []byte, typ plumbing.ObjectType, n int64) []byte {
	c := byte(typ)<<4 | byte(n&0x0f)
	for n >>= 4; n != 0; n >>= 7 {
		b = append(b, c|0x80)
		c = byte(n & 0x7f)
	}
	return append(b, c)
}

// appendOfsOffset encodes an ofs-delta's distance to its base, as
// readOfsOffset decodes it.
func appendOfsOffset(b []byte, n int64) []byte {
	var buf [10]byte
	i := len(buf) - 1
	buf[i] = byte(n & 0x7f)
	for n >>= 7; n != 0; n >>= 7 {
		n--
		i--
		buf[i] = 0x80 | byte(n&0x7f)
	}
	return append(b, buf[i:]...)
}
