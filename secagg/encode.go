package secagg

import (
	"encoding/binary"
	"fmt"
)

// maskedMagic opens an encoded masked input (EncodeMasked).
const maskedMagic = "ptopofl-secagg-masked-v1"

// EncodeMasked is the byte form of a masked input (or of any vector of
// words modulo 2ᵐ, m = modBits): the magic "ptopofl-secagg-masked-v1",
// one byte m (32 or 64), the number of words as a big-endian uint64, then
// each word little-endian in m/8 bytes. It panics on a modBits other than
// 32 or 64 (a programming error: Config.check refuses those).
func EncodeMasked(y []uint64, modBits int) []byte {
	if modBits != 32 && modBits != 64 {
		panic(fmt.Sprintf("secagg: EncodeMasked with %d-bit words", modBits))
	}
	w := modBits / 8
	b := make([]byte, 0, len(maskedMagic)+9+w*len(y))
	b = append(b, maskedMagic...)
	b = append(b, byte(modBits))
	b = binary.BigEndian.AppendUint64(b, uint64(len(y)))
	for _, v := range y {
		if w == 4 {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		} else {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return b
}

// DecodeMasked reads EncodeMasked's form back: the words and m. A
// truncated or foreign object is an error that says which.
func DecodeMasked(b []byte) ([]uint64, int, error) {
	if len(b) < len(maskedMagic)+9 || string(b[:len(maskedMagic)]) != maskedMagic {
		return nil, 0, fmt.Errorf("secagg: not a masked input (no %q header)", maskedMagic)
	}
	b = b[len(maskedMagic):]
	modBits := int(b[0])
	if modBits != 32 && modBits != 64 {
		return nil, 0, fmt.Errorf("secagg: masked input of %d-bit words; want 32 or 64", modBits)
	}
	n := binary.BigEndian.Uint64(b[1:9])
	b = b[9:]
	w := uint64(modBits / 8)
	if n > uint64(len(b))/w || uint64(len(b)) != n*w {
		return nil, 0, fmt.Errorf("secagg: masked input says %d words of %d bits and holds %d bytes", n, modBits, len(b))
	}
	y := make([]uint64, n)
	for i := range y {
		if w == 4 {
			y[i] = uint64(binary.LittleEndian.Uint32(b[4*i:]))
		} else {
			y[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	}
	return y, modBits, nil
}
