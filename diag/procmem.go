package diag

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MemDoc is serverStatus.mem: the process's resident and virtual memory in
// MiB, read from /proc where the system has it.
func MemDoc() bson.D {
	doc := bson.D{{Key: "bits", Value: int32(strconv.IntSize)}}
	b, err := os.ReadFile("/proc/self/statm")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 {
		return append(doc, bson.E{Key: "supported", Value: false})
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	resident, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return append(doc, bson.E{Key: "supported", Value: false})
	}
	page := int64(os.Getpagesize())
	return append(doc,
		bson.E{Key: "resident", Value: int32(resident * page >> 20)},
		bson.E{Key: "virtual", Value: int32(size * page >> 20)},
		bson.E{Key: "supported", Value: true},
	)
}

// MemTotalMB is the machine's memory in MiB, from /proc/meminfo.
func MemTotalMB() (int32, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, false
		}
		return int32(kb >> 10), true
	}
	return 0, false
}
