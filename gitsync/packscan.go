package gitsync

import (
	"bufio"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// packEntry is one object of a pack as it arrived.
type packEntry struct {
	offset     int64 // of its header
	dataOffset int64 // of its compressed data
	size       int64 // inflated size (a delta's: of its instructions)
	baseOffset int64 // an ofs-delta's base
	typ        plumbing.ObjectType
	// kind is the type of the object it makes: its own, or its base
	// chain's (invalid when unknown: a ref-delta's)
	kind plumbing.ObjectType
	drop bool
}

// packScan is what scanPack learnt of a pack.
type packScan struct {
	version  uint32
	entries  []packEntry
	refBases map[int]plumbing.Hash // a ref-delta's base, by entry index
	length   int64                 // of the pack, checksum included
	// dropped: whole objects left out for their size, by hash
	dropped       map[plumbing.Hash]int64
	droppedDeltas int
	nDropped      int
}

func (p *packScan) kept() int { return len(p.entries) - p.nDropped }

// end is where entry i's compressed data ends.
func (p *packScan) end(i int) int64 {
	if i+1 < len(p.entries) {
		return p.entries[i+1].offset
	}
	return p.length - 20
}

// index finds the entry at an offset (-1: none).
func (p *packScan) index(offset int64) int {
	i := sort.Search(len(p.entries), func(i int) bool { return p.entries[i].offset >= offset })
	if i < len(p.entries) && p.entries[i].offset == offset {
		return i
	}
	return -1
}

var errMalformedPack = errors.New("malformed pack")

// packScanner reads one pack.
type packScanner struct {
	ctx  context.Context
	cr   *countingReader
	zr   io.ReadCloser // reused from object to object
	buf  []byte
	lim  limits
	scan *packScan
	// expanded: the bytes inflated so far, and those the deltas make
	expanded int64
}

// scanPack reads a pack as it arrives, copying it to out, and marks the
// objects over the limits (and deltas on them) to be left out. It
// inflates each object once, to find where it ends, in constant memory:
// an object's size is in its header (a delta's in its first bytes), so
// nothing is held whole. The pack's checksum is verified.
func scanPack(ctx context.Context, r io.Reader, out io.Writer, lim limits) (*packScan, error) {
	cr := &countingReader{r: bufio.NewReaderSize(io.TeeReader(r, out), 64<<10), sum: sha1.New(), max: lim.packBytes()}
	var head [12]byte
	if _, err := io.ReadFull(cr, head[:]); err != nil {
		return nil, fmt.Errorf("pack header: %w", err)
	}
	if string(head[:4]) != "PACK" {
		return nil, fmt.Errorf("%w: no PACK signature", errMalformedPack)
	}
	scan := &packScan{version: binary.BigEndian.Uint32(head[4:8]), dropped: map[plumbing.Hash]int64{}, refBases: map[int]plumbing.Hash{}}
	if scan.version != 2 && scan.version != 3 {
		return nil, fmt.Errorf("%w: version %d", errMalformedPack, scan.version)
	}
	count := binary.BigEndian.Uint32(head[8:12])
	if over(int64(count), lim.packObjects()) {
		return nil, fmt.Errorf("%w: it holds %d objects, more than %d (%d for each file the files limit allows)",
			errPackBudget, count, lim.packObjects(), packObjectsPerFile)
	}
	scan.entries = make([]packEntry, 0, min(count, 1<<16))
	ps := &packScanner{ctx: ctx, cr: cr, buf: make([]byte, 32<<10), lim: lim, scan: scan}
	for i := range int(count) {
		if err := ps.next(i); err != nil {
			return nil, fmt.Errorf("object %d of %d: %w", i+1, count, err)
		}
	}
	want := cr.checksum()
	var trailer [20]byte
	if _, err := io.ReadFull(cr, trailer[:]); err != nil {
		return nil, fmt.Errorf("pack checksum: %w", err)
	}
	if string(trailer[:]) != string(want) {
		return nil, fmt.Errorf("%w: checksum mismatch", errMalformedPack)
	}
	scan.length = cr.n
	return scan, nil
}

// next reads object i.
func (ps *packScanner) next(i int) error {
	e, base, err := readEntryHeader(ps.cr, ps.scan)
	if err != nil {
		return err
	}
	if e.typ == plumbing.REFDeltaObject {
		ps.scan.refBases[i] = base
	}
	if err := ps.data(&e); err != nil {
		return err
	}
	ps.scan.entries = append(ps.scan.entries, e)
	return nil
}

// readEntryHeader reads an object's header: type and size, and a delta's
// base (a ref-delta's is returned).
func readEntryHeader(cr *countingReader, scan *packScan) (packEntry, plumbing.Hash, error) {
	e := packEntry{offset: cr.n}
	c, err := cr.ReadByte()
	if err != nil {
		return e, plumbing.ZeroHash, err
	}
	e.typ = plumbing.ObjectType((c >> 4) & 7)
	e.size = int64(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return e, plumbing.ZeroHash, fmt.Errorf("%w: size overflows", errMalformedPack)
		}
		if c, err = cr.ReadByte(); err != nil {
			return e, plumbing.ZeroHash, err
		}
		e.size += int64(c&0x7f) << shift
	}
	e.kind = e.typ
	var base plumbing.Hash
	switch e.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		rel, err := readOfsOffset(cr)
		if err != nil {
			return e, base, err
		}
		e.baseOffset = e.offset - rel
		b := scan.index(e.baseOffset)
		if rel <= 0 || b < 0 {
			return e, base, fmt.Errorf("%w: delta base at %d is not an object", errMalformedPack, e.baseOffset)
		}
		e.kind, e.drop = scan.entries[b].kind, scan.entries[b].drop
	case plumbing.REFDeltaObject:
		if _, err := io.ReadFull(cr, base[:]); err != nil {
			return e, base, err
		}
		e.kind = plumbing.InvalidObject
		_, e.drop = scan.dropped[base]
	default:
		return e, base, fmt.Errorf("%w: object type %d", errMalformedPack, e.typ)
	}
	e.dataOffset = cr.n
	return e, base, nil
}

// data inflates an object's data, deciding on the way whether it is left
// out: a whole object over its limit (hashed, to be named later), a delta
// making one, or a delta on an object left out.
func (ps *packScanner) data(e *packEntry) error {
	var err error
	if ps.zr == nil {
		ps.zr, err = zlib.NewReader(ps.cr)
	} else {
		err = ps.zr.(zlib.Resetter).Reset(ps.cr, nil)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errMalformedPack, err)
	}
	limit := ps.lim.objectSize()
	if e.kind == plumbing.BlobObject {
		limit = ps.lim.fileSize
	}
	sink := &dataSink{ps: ps}
	delta := e.typ == plumbing.OFSDeltaObject || e.typ == plumbing.REFDeltaObject
	wholeOver := !delta && over(e.size, limit)
	if wholeOver {
		sink.hash = sha1.New()
		fmt.Fprintf(sink.hash, "%s %d\x00", e.typ, e.size)
	}
	// one byte more than declared, to notice data longer than its size;
	// shorter means zlib reached its end, checksum included, so the next
	// object starts where this one ends
	n, err := io.CopyBuffer(sink, io.LimitReader(ps.zr, e.size+1), ps.buf)
	if err != nil {
		return err
	}
	if n != e.size {
		return fmt.Errorf("%w: inflates to %d bytes or more, not %d", errMalformedPack, n, e.size)
	}
	if delta {
		if err := ps.expand(max(sink.targetSize(), 0)); err != nil {
			return err
		}
	}
	switch {
	case wholeOver:
		ps.scan.dropped[plumbing.Hash(sink.hash.Sum(nil))] = e.size
	case delta && (e.drop || over(e.size, limit) || over(sink.targetSize(), limit)):
		ps.scan.droppedDeltas++
	default:
		return nil
	}
	e.drop = true
	ps.scan.nDropped++
	return nil
}

// expand counts n more bytes made from the pack, and checks the pack's
// budget of expanded bytes.
func (ps *packScanner) expand(n int64) error {
	ps.expanded += n
	if over(ps.expanded, ps.lim.packExpand()) {
		return fmt.Errorf("%w: its objects and what its deltas make come to more than %s", errPackBudget, size(ps.lim.packExpand()))
	}
	return nil
}

// dataSink takes an object's inflated data: it keeps a delta's first
// bytes (its header), hashes an object being left out, and stops when the
// sync's context ends (a huge object takes a while to inflate) or the
// pack's budgets are spent.
type dataSink struct {
	ps   *packScanner
	head []byte
	hash hash.Hash
}

func (d *dataSink) Write(b []byte) (int, error) {
	if err := d.ps.ctx.Err(); err != nil {
		return 0, err
	}
	if err := d.ps.expand(int64(len(b))); err != nil {
		return 0, err
	}
	if len(d.head) < 32 {
		d.head = append(d.head, b[:min(len(b), 32-len(d.head))]...)
	}
	if d.hash != nil {
		d.hash.Write(b)
	}
	return len(b), nil
}

// targetSize is the size of the object a delta makes, read from its
// header (after the base's size); -1 when unreadable.
func (d *dataSink) targetSize() int64 {
	b := d.head
	var sizes [2]int64
	for i := range sizes {
		var v int64
		for shift := 0; ; shift += 7 {
			if len(b) == 0 || shift > 56 {
				return -1
			}
			c := b[0]
			b = b[1:]
			v |= int64(c&0x7f) << shift
			if c&0x80 == 0 {
				break
			}
		}
		sizes[i] = v
	}
	return sizes[1]
}

// readOfsOffset reads an ofs-delta's distance to its base (git's offset
// encoding: each continuation adds one before shifting).
func readOfsOffset(cr *countingReader) (int64, error) {
	c, err := cr.ReadByte()
	if err != nil {
		return 0, err
	}
	v := int64(c & 0x7f)
	for c&0x80 != 0 {
		if v >= 1<<56 {
			return 0, fmt.Errorf("%w: delta offset overflows", errMalformedPack)
		}
		if c, err = cr.ReadByte(); err != nil {
			return 0, err
		}
		v = ((v + 1) << 7) | int64(c&0x7f)
	}
	return v, nil
}

// countingReader reads a pack exactly as far as it is parsed (zlib reads
// it byte by byte through ReadByte, never past an object's end), counting
// the offset and hashing what it reads for the trailing checksum (bytes
// read one by one are hashed by the block).
type countingReader struct {
	r       *bufio.Reader
	sum     hash.Hash
	n       int64
	pending []byte
	max     int64 // the pack's budget of bytes (0: none)
}

// errTooBig: the pack is longer than its budget (whatever it inflates to:
// empty deflate blocks make nothing).
func (c *countingReader) errTooBig() error {
	return fmt.Errorf("%w: it is bigger than %s", errPackBudget, size(c.max))
}

func (c *countingReader) Read(b []byte) (int, error) {
	c.flush()
	if c.max > 0 {
		if c.n > c.max {
			return 0, c.errTooBig()
		}
		b = b[:min(int64(len(b)), c.max-c.n+1)]
	}
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.sum.Write(b[:n])
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	if over(c.n+1, c.max) {
		return 0, c.errTooBig()
	}
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
		if c.pending = append(c.pending, b); len(c.pending) == 4096 {
			c.flush()
		}
	}
	return b, err
}

func (c *countingReader) flush() {
	c.sum.Write(c.pending)
	c.pending = c.pending[:0]
}

// checksum is the hash of what was read so far.
func (c *countingReader) checksum() []byte {
	c.flush()
	return c.sum.Sum(nil)
}
