package conn

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/wire"
)

// NegotiateCompression keeps the compressors of the client's list that this
// server has, in the client's order, and appends them to a hello reply as
// "compression". Replies to requests compressed with one of them go out
// compressed with it.
func (c *Conn) NegotiateCompression(dst []byte, offered bson.RawArray) []byte {
	c.compressors = c.compressors[:0]
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "compression")
	values, _ := offered.Values() // validated by the wire layer
	for _, v := range values {
		name, ok := v.StringValueOK()
		if !ok {
			continue
		}
		comp, ok := wire.CompressorByName(name)
		if !ok || c.negotiated(comp) {
			continue
		}
		dst = bsoncore.AppendStringElement(dst, strconv.Itoa(len(c.compressors)), name)
		c.compressors = append(c.compressors, comp)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	if len(c.compressors) > 0 {
		c.l.log.Debug("compression negotiated", zap.Int64("conn", c.id), zap.Stringers("compressors", c.compressors))
	}
	return dst
}

func (c *Conn) negotiated(comp wire.Compressor) bool {
	for _, n := range c.compressors {
		if n == comp {
			return true
		}
	}
	return false
}
