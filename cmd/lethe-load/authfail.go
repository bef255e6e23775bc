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
	// in each condition, one round per condition so that each comes once
	// in each place of the order; the failed logins are split evenly
	// between the rounds.
	attackRounds = conditions
	// attackHosts is how many loopback addresses the spread attack comes
	// from. Spread this way, no address of the 10,000 failed
	// logins (the --failed-logins default) fails more than three times, so
	// the server's per-address throttle never holds an attempt back: every
	// login is answered at once, the most work an attack can make the
	// server do.
	attackHosts = 4096
	// maxAttack bounds one round of a counted attack.
	maxAttack = time.Minute
)

// The conditions auth-failures measures the authenticated clients in.
const (
	quiet         = iota // nothing else happens
	spreadAttack         // cfg.failedLogins from attackHosts addresses
	oneHostAttack        // failed logins from one address, for a fixed time
	connChurn            // cfg.failedLogins connections that only say hello
	conditions
)

// runAuthFailures checks that failed logins do not slow down the
// authenticated clients of the same server. cfg.clients authenticated
// clients find documents by _id while, in alternating rounds, cfg.clients
// other goroutines make failed SCRAM-SHA-256 logins (a wrong password,
// each on a new connection, each checked to fail with
// AuthenticationFailed) as fast as the server answers them:
//
//   - findone-attacked: cfg.failedLogins in all, from attackHosts
//     addresses, which the throttle lets through at once;
//   - findone-attacked-one-host: from one address, which the throttle
//     slows down, for as long as the quiet rounds; failed-logins-one-host
//     counts the logins the server refused in that time;
//   - findone-conn-churn: as many connections as the spread attack, from
//     the same addresses, that close after hello: the part of the
//     attack's cost that is connection setup, not authentication.
//
// The findOne figures are judged against those of the quiet rounds.
//
// The attackers speak SCRAM over raw connections and share one SCRAM
// client, which derives the wrong password's salted form once: the load
// tool should spend the machine's CPU on the server's side of the attack,
// not on PBKDF2.
func runAuthFailures(ctx context.Context, e *env) ([]result, error) {
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

	find := findOneOp(coll, e.cfg.docs)
	conc := e.cfg.clients
	total := e.cfg.failedLogins
	perRound := (total + attackRounds - 1) / attackRounds
	round := e.cfg.duration / attackRounds
	// The preload's flushes and compactions would slow whichever round
	// came first: let them pass under an unmeasured one.
	if _, err := measureFor(ctx, conc, round, find); err != nil {
		return nil, err
	}
	var floods [conditions]sample
	var sent [conditions]int // attempts of the counted floods so far
	counted := func(cond int, attempt func(ctx context.Context, i int) error) func(context.Context) (sample, error) {
		first := sent[cond]
		n := min(perRound, total-first)
		sent[cond] += n
		return func(ctx context.Context) (sample, error) {
			ctx, cancel := context.WithTimeoutCause(ctx, maxAttack, fmt.Errorf("%d attempts took longer than %v", n, maxAttack))
			defer cancel()
			return flood(ctx, n, conc, nil, func(ctx context.Context, i int) error {
				return attempt(ctx, first+i)
			})
		}
	}
	samples, err := alternate(attackRounds, conditions, func(cond int) (sample, error) {
		var attack func(context.Context) (sample, error)
		switch cond {
		case quiet:
			return measureFor(ctx, conc, round, find)
		case spreadAttack:
			attack = counted(cond, func(ctx context.Context, i int) error {
				return failedLogin(ctx, addr, attackHost(i), attacker)
			})
		case connChurn:
			attack = counted(cond, func(ctx context.Context, i int) error {
				return helloOnly(ctx, addr, attackHost(i))
			})
		case oneHostAttack:
			attack = func(ctx context.Context) (sample, error) {
				window, cancel := context.WithTimeout(ctx, round)
				defer cancel()
				return flood(ctx, -1, conc, window.Done(), func(ctx context.Context, _ int) error {
					return failedLogin(ctx, addr, oneAttackHost, attacker)
				})
			}
		}
		s, a, err := measureAttacked(ctx, conc, find, attack)
		if err != nil {
			return sample{}, err
		}
		floods[cond] = mergeSamples(floods[cond], a)
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	e.logf("auth-failures: %d failed logins from %d addresses, all AuthenticationFailed, in %v; %d from one address in %v",
		floods[spreadAttack].ops, min(total, attackHosts), floods[spreadAttack].elapsed.Round(time.Millisecond),
		floods[oneHostAttack].ops, floods[oneHostAttack].elapsed.Round(time.Millisecond))
	return []result{
		{name: "findone-quiet", sample: samples[quiet]},
		{name: "findone-attacked", sample: samples[spreadAttack], ceiling: "findone-quiet", target: 0.9},
		{name: "findone-attacked-one-host", sample: samples[oneHostAttack], ceiling: "findone-quiet", target: 0.9},
		{name: "findone-conn-churn", sample: samples[connChurn], ceiling: "findone-quiet"},
		{name: "failed-logins", sample: floods[spreadAttack]},
		{name: "failed-logins-one-host", sample: floods[oneHostAttack]},
		{name: "conn-churn", sample: floods[connChurn]},
	}, nil
}

// oneAttackHost is the address of the attack from one host.
var oneAttackHost = net.IPv4(127, 2, 0, 1)

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

// flood runs attempt(i) for i from 0 to n-1 (without end when n < 0) from
// conc goroutines at once, each as soon as its previous one ended, until
// they are done or stop closes, and returns the latencies of the attempts
// that ended. Attempts under way when stop closes are cancelled and not
// counted.
func flood(ctx context.Context, n, conc int, stop <-chan struct{}, attempt func(ctx context.Context, i int) error) (sample, error) {
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				fail(errStopped)
			case <-ctx.Done():
			}
		}()
	}
	var next atomic.Int64
	hists := make([]*histogram, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conc {
		h := newHistogram()
		hists[g] = h
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if n >= 0 && i >= n {
					return
				}
				began := time.Now()
				if err := attempt(ctx, i); err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					return
				}
				h.record(time.Since(began))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := newHistogram()
	for _, h := range hists {
		all.merge(h)
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, errStopped) {
		return sample{}, fmt.Errorf("%d of %d attempts made: %w", all.count(), n, err)
	}
	return sample{ops: all.count(), elapsed: elapsed, latency: all}, nil
}

// errStopped is why flood cancels the attempts under way when told to stop.
var errStopped = errors.New("stopped")

// attackHost is the loopback address attempt i comes from: 127.1.0.1 and
// on, never the 127.0.0.1 the authenticated clients use. Linux routes the
// whole of 127.0.0.0/8 to the loopback interface; other systems may need
// the addresses added to it first.
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
	// The throttle may hold the reply for seconds: leave when told to.
	defer context.AfterFunc(ctx, func() { c.close() })()
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

// helloOnly opens a connection from host, says hello and closes it.
func helloOnly(ctx context.Context, addr string, host net.IP) error {
	c, err := dialRaw(ctx, addr, host)
	if err != nil {
		return err
	}
	defer c.close()
	return c.hello()
}
