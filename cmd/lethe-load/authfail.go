package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdg-go/scram"
)

const (
	// attackRounds is how many times auth-failures measures the client
	// with and without the attack; the failed logins are split evenly
	// between the attacked rounds.
	attackRounds = 2
	// attackHosts is how many loopback addresses the attack comes from.
	// Spread this way, no address of the 10,000 failed logins (the
	// --failed-logins default) fails more than three times, so the
	// server's per-address throttle never holds an attempt back: every
	// login is answered at once, the most work an attack can make the
	// server do.
	attackHosts = 4096
	// maxAttack bounds one round of the attack.
	maxAttack = time.Minute
)

// runAuthFailures checks that failed logins do not slow down the
// authenticated clients of the same server. cfg.clients authenticated
// clients find documents by _id; in alternating rounds, cfg.clients other
// goroutines make failed SCRAM-SHA-256 logins (a wrong password, each on a
// new connection, each checked to fail with AuthenticationFailed) as fast
// as the server answers them, cfg.failedLogins in all. The findOne figures
// with the attack are judged against those without; failed-logins reports
// the attack's own rate and latency.
//
// The attackers speak SCRAM over raw connections and share one SCRAM
// client, which derives the wrong password's salted form once: the load
// tool should spend the machine's CPU on the server's side of the attack,
// not on PBKDF2.
func runAuthFailures(ctx context.Context, e *env) ([]result, error) {
	if e.cfg.uri != "" {
		return nil, errors.New("auth-failures starts its own server: run it without --uri")
	}
	addr, stop, err := startAuthServer(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	client, err := authClient(ctx, addr, e.cfg.clients)
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(context.Background())
	pe := &env{cfg: e.cfg, db: client.Database(e.db.Name()), progress: e.progress}
	coll, err := pe.preload(ctx)
	if err != nil {
		return nil, err
	}
	attacker, err := scram.SHA256.NewClient(benchUser, "not-"+benchPassword, "")
	if err != nil {
		return nil, fmt.Errorf("scram client: %w", err)
	}

	var attacks sample
	sent := 0
	total := e.cfg.failedLogins
	perRound := (total + attackRounds - 1) / attackRounds
	samples, err := alternate(attackRounds, 2, func(i int) (sample, error) {
		if i == 0 {
			return measureFor(ctx, e.cfg.clients, e.cfg.duration/attackRounds, findOneOp(coll, e.cfg.docs))
		}
		n := min(perRound, total-sent)
		s, a, err := measureAttacked(ctx, e.cfg.clients, findOneOp(coll, e.cfg.docs), func(ctx context.Context) (sample, error) {
			return attack(ctx, addr, attacker, sent, n, e.cfg.clients)
		})
		if err != nil {
			return sample{}, err
		}
		sent += n
		attacks = mergeSamples(attacks, a)
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	e.logf("auth-failures: %d failed logins, all AuthenticationFailed, in %v (%.0f/s)",
		attacks.ops, attacks.elapsed.Round(time.Millisecond), attacks.opsPerSec())
	return []result{
		{name: "findone-attacked", sample: samples[1], ceiling: "findone-quiet", target: 0.9},
		{name: "findone-quiet", sample: samples[0]},
		{name: "failed-logins", sample: attacks},
	}, nil
}

// measureAttacked runs clients loops of newOp's ops for as long as attack
// takes, and returns both samples.
func measureAttacked(ctx context.Context, clients int, newOp func(int) op, attack func(context.Context) (sample, error)) (sample, sample, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var a sample
	var aerr error
	go func() {
		defer close(done)
		a, aerr = attack(ctx)
	}()
	s, err := measureUntil(ctx, clients, done, newOp)
	cancel() // stops the attack if the clients failed
	<-done
	if err := errors.Join(err, aerr); err != nil {
		return sample{}, sample{}, err
	}
	return s, a, nil
}

// attack makes n failed logins, numbered from first, from conc goroutines
// at once, each as soon as the previous one was refused, and returns their
// latencies. Login i comes from loopback address i mod attackHosts.
func attack(ctx context.Context, addr string, client *scram.Client, first, n, conc int) (sample, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, maxAttack, fmt.Errorf("%d failed logins took longer than %v", n, maxAttack))
	defer cancel()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var next atomic.Int64
	var done atomic.Uint64
	hists := make([]*histogram, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conc {
		h := newHistogram()
		hists[g] = h
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				began := time.Now()
				if err := failedLogin(ctx, addr, attackHost(first+i), client); err != nil {
					fail(err)
					return
				}
				h.record(time.Since(began))
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return sample{}, fmt.Errorf("attack: %d of %d failed logins made: %w", done.Load(), n, err)
	}
	all := newHistogram()
	for _, h := range hists {
		all.merge(h)
	}
	return sample{ops: all.count(), elapsed: elapsed, latency: all}, nil
}

// attackHost is the loopback address login i comes from: 127.1.0.1 and
// on, never the 127.0.0.1 the authenticated clients use.
func attackHost(i int) net.IP {
	h := i%attackHosts + 1
	return net.IPv4(127, 1, byte(h>>8), byte(h))
}

// failedLogin logs in with client's wrong password on a new connection
// from host, and checks that the server refuses it as MongoDB does.
func failedLogin(ctx context.Context, addr string, host net.IP, client *scram.Client) error {
	c, err := dialRaw(ctx, addr, host)
	if err != nil {
		return err
	}
	defer c.close()
	err = c.scramLogin(client, benchUser)
	var ce *commandError
	switch {
	case err == nil:
		return errors.New("a login with a wrong password succeeded")
	case errors.As(err, &ce) && ce.code == codeAuthenticationFailed:
		return nil
	default:
		return fmt.Errorf("a login with a wrong password: want AuthenticationFailed (%d), got %w", codeAuthenticationFailed, err)
	}
}
