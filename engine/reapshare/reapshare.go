package reapshare

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
)

// Prefix is the first byte of the reaper leases' key family.
const Prefix = 'y'

// Key is the key of the lease record of slot.
func Key(slot int) []byte {
	return binary.BigEndian.AppendUint16([]byte{Prefix}, uint16(slot))
}

// SlotOfIndex is the slot a date TTL index belongs to, whole.
func SlotOfIndex(indexID uint64, slots int) int {
	return int(indexID % uint64(slots))
}

// Lease is the record of a slot.
type Lease struct {
	// Holder is the roster id of the server that holds the slot.
	Holder string `bson:"holder"`
	// Expires is the store's time, in milliseconds, at which the lease
	// runs out unless renewed.
	Expires int64 `bson:"expires"`
}

// Live reports whether the lease holds at now (milliseconds).
func (l Lease) Live(nowMillis int64) bool { return l.Holder != "" && l.Expires > nowMillis }

// Preferred is the server that should hold slot among the live servers,
// whose ids are in ascending order: the (slot mod n)th. "" if none is live.
func Preferred(slot int, live []string) string {
	if len(live) == 0 {
		return ""
	}
	return live[slot%len(live)]
}

// Options configure a Sharer.
type Options struct {
	Store kv.Store
	// Slots is the number of slots, at least 1 and at most 65536.
	Slots int
	// Self is this server's roster id.
	Self string
	// Now is the store's shared time.
	Now func() time.Time
	// Lease is how long a lease holds without a renewal.
	Lease time.Duration
}

// Sharer is this server's part in the division of the reaper's work.
type Sharer struct {
	opts Options

	// roundMu keeps two rounds from racing each other over what is held.
	roundMu sync.Mutex

	mu sync.Mutex
	// until is, by slot, the time (opts.Now, in milliseconds) up to which
	// this server holds it; 0 if it does not.
	until []int64
	// stopped is set by Release: the server holds nothing any more.
	stopped bool
}

// New returns a sharer that holds no slot until its first Round.
func New(opts Options) (*Sharer, error) {
	if opts.Slots < 1 || opts.Slots > 1<<16 {
		return nil, fmt.Errorf("reapshare: %d slots, want 1 to 65536", opts.Slots)
	}
	if opts.Self == "" || opts.Lease <= 0 || opts.Now == nil || opts.Store == nil {
		return nil, errors.New("reapshare: a sharer needs a store, an id, a clock and a lease")
	}
	return &Sharer{opts: opts, until: make([]int64, opts.Slots)}, nil
}

// Slots is the number of slots the work is cut into.
func (s *Sharer) Slots() int { return s.opts.Slots }

// Held reports, by slot, whether this server holds it now.
func (s *Sharer) Held() []bool {
	now := s.opts.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bool, len(s.until))
	for i, u := range s.until {
		out[i] = !s.stopped && u > now
	}
	return out
}

// errStopped is Round's error once the sharer has released its leases.
var errStopped = errors.New("reapshare: the leases were released")

// Round takes, renews and hands over leases in one store transaction, as
// the live roster's ids say: see the package doc.
// Run it every third of the lease. On an error nothing changed in the
// store, and the slots held stay held until their leases run out.
func (s *Sharer) Round(ctx context.Context, live []string) error {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	// The lease holds here from before the transaction, so that this
	// server stops reaping a slot no later than the others may take it.
	start := s.opts.Now()
	tx, cur, err := s.lockLeases(ctx, "round")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return errStopped
	}
	now := s.opts.Now()
	writes, held := Plan(cur, s.opts.Self, live, now.UnixMilli(), now.Add(s.opts.Lease).UnixMilli())
	for slot, l := range writes {
		if l.Holder == "" {
			if err := tx.Delete(Key(slot)); err != nil {
				return err
			}
			continue
		}
		raw, err := bson.Marshal(l)
		if err != nil {
			return fmt.Errorf("reapshare: encode lease: %w", err)
		}
		if err := tx.Set(Key(slot), raw); err != nil {
			return err
		}
	}
	if len(writes) > 0 {
		if _, err := tx.Commit(ctx, kv.Sync); err != nil {
			return fmt.Errorf("reapshare: round: %w", err)
		}
	}
	until := start.Add(s.opts.Lease).UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.until {
		s.until[i] = 0
		if held[i] {
			s.until[i] = until
		}
	}
	return nil
}

// lockLeases begins the transaction of a round or a release (what): it
// locks every slot's lease and reads them as they are now.
func (s *Sharer) lockLeases(ctx context.Context, what string) (kv.Txn, []Lease, error) {
	tx, err := s.opts.Store.Begin(ctx, kv.TxnOptions{Pessimistic: true, LockWait: s.opts.Lease / 3})
	if err != nil {
		return nil, nil, fmt.Errorf("reapshare: %s: %w", what, err)
	}
	keys := make([][]byte, s.opts.Slots)
	for i := range keys {
		keys[i] = Key(i)
	}
	if err := tx.LockKeys(ctx, kv.LockOptions{}, keys...); err != nil {
		tx.Rollback()
		return nil, nil, fmt.Errorf("reapshare: lock the leases: %w", err)
	}
	cur, err := read(ctx, tx, s.opts.Slots)
	if err != nil {
		tx.Rollback()
		return nil, nil, err
	}
	return tx, cur, nil
}

// read returns the lease of every slot, the zero Lease for a slot that
// has no record.
func read(ctx context.Context, r kv.Reader, slots int) ([]Lease, error) {
	cur := make([]Lease, slots)
	lo := []byte{Prefix}
	it, err := r.Iter(ctx, lo, kv.PrefixEnd(lo), false)
	if err != nil {
		return nil, fmt.Errorf("reapshare: read the leases: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != 3 {
			return nil, fmt.Errorf("reapshare: malformed lease key %x", k)
		}
		slot := int(binary.BigEndian.Uint16(k[1:]))
		if slot >= slots {
			continue // a layout with more slots is not this store's
		}
		if err := bson.Unmarshal(it.Value(), &cur[slot]); err != nil {
			return nil, fmt.Errorf("reapshare: lease %x: %w", k, err)
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("reapshare: read the leases: %w", err)
	}
	return cur, nil
}

// Plan decides a round of server self, given the current leases by slot,
// the live roster's ids, the time now and the expiry a
// lease written now gets (milliseconds): the leases to write, by slot (the
// zero Lease to delete one), and which slots self holds after them.
//
//   - A slot self holds is renewed if self is its preferred holder, and
//     handed to the preferred holder otherwise (deleted if none is live).
//   - A free slot, or one whose lease has run out, is taken by its
//     preferred holder only.
//   - A slot another server holds is left alone: its holder hands it over.
func Plan(cur []Lease, self string, live []string, now, expires int64) (writes map[int]Lease, held []bool) {
	if !slices.IsSorted(live) {
		live = slices.Sorted(slices.Values(live))
	}
	writes = map[int]Lease{}
	held = make([]bool, len(cur))
	for slot, l := range cur {
		pref := Preferred(slot, live)
		switch {
		case l.Live(now) && l.Holder == self:
			if pref == self {
				writes[slot] = Lease{Holder: self, Expires: expires}
				held[slot] = true
			} else if pref != "" {
				// The new holder renews what it finds in its name; if it
				// is gone, the lease runs out as its own would have.
				writes[slot] = Lease{Holder: pref, Expires: expires}
			} else {
				writes[slot] = Lease{}
			}
		case l.Live(now):
		case pref == self:
			writes[slot] = Lease{Holder: self, Expires: expires}
			held[slot] = true
		}
	}
	return writes, held
}

// Release gives up the slots this server holds, so that their preferred
// holders take them at their next round rather than once the leases run
// out. The sharer holds nothing from then on, whether or not the store
// took the release.
func (s *Sharer) Release(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	tx, cur, err := s.lockLeases(ctx, "release")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	released := false
	for slot, l := range cur {
		if l.Holder == s.opts.Self {
			if err := tx.Delete(Key(slot)); err != nil {
				return err
			}
			released = true
		}
	}
	if !released {
		return nil
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("reapshare: release: %w", err)
	}
	return nil
}
