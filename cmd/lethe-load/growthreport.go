package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// growthVerdict compares a request's figures at the last checkpoint with
// those at the first: how many times fewer operations per second and how
// many times the median latency, each raw and relative to the ping
// measured right before it (the median over rounds of its ratio to that
// ping), so that what the machine's load did to both cancels out.
type growthVerdict struct {
	kind                       string
	slowdown, slowdownVsPing   float64 // first's ops/s over last's
	p50Growth, p50GrowthVsPing float64 // last's p50 over first's
	pass                       bool    // both relative figures within growthLimit
}

func (g *growthRun) verdicts() []growthVerdict {
	if len(g.points) < 2 {
		return nil
	}
	first, last := g.points[0], g.points[len(g.points)-1]
	var vs []growthVerdict
	for _, kind := range growthKinds[1:] {
		f, l := first.samples[kind], last.samples[kind]
		if f.latency == nil || l.latency == nil {
			continue
		}
		v := growthVerdict{
			kind:            kind,
			slowdown:        f.opsPerSec() / l.opsPerSec(),
			p50Growth:       float64(l.latency.quantile(0.5)) / float64(f.latency.quantile(0.5)),
			slowdownVsPing:  median(first.vsPing[kind]) / median(last.vsPing[kind]),
			p50GrowthVsPing: median(last.p50VsPing[kind]) / median(first.p50VsPing[kind]),
		}
		v.pass = v.slowdownVsPing <= growthLimit && v.p50GrowthVsPing <= growthLimit
		vs = append(vs, v)
	}
	return vs
}

func verdictText(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func (g *growthRun) writeText(w io.Writer, clients, rounds int, duration time.Duration) error {
	fmt.Fprintf(w, "\ngrowth: %d B documents with an indexed field k, loaded by unordered insertMany of %d from %d clients;\n",
		growthDocSize, loadBatch, clients)
	fmt.Fprintf(w, "each request measured at each checkpoint in %d rounds of %v, each right after a ping of as long; server --cache-size-mb=%d --oplog-size-mb=%d\n",
		rounds, duration/time.Duration(rounds), g.cacheMiB, g.oplogMiB)
	for _, kind := range growthKinds {
		fmt.Fprintf(w, "  %-12s %s\n", kind, growthKindHelp[kind])
	}
	if len(g.points) == 0 {
		fmt.Fprintln(w, "no checkpoint reached")
		return nil
	}

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "request")
	for _, p := range g.points {
		fmt.Fprintf(tw, "\t%s ops/s\tp50\tp99\tvs ping", p.label)
	}
	fmt.Fprintln(tw)
	for _, kind := range growthKinds {
		fmt.Fprint(tw, kind)
		for _, p := range g.points {
			s, ok := p.samples[kind]
			if !ok || s.latency == nil {
				fmt.Fprint(tw, "\t-\t-\t-\t-")
				continue
			}
			ratio := "-"
			if r := p.vsPing[kind]; len(r) > 0 {
				ratio = fmt.Sprintf("%.2fx", median(r))
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s", opsText(s.opsPerSec()), formatLatency(s.latency.quantile(0.5)), formatLatency(s.latency.quantile(0.99)), ratio)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if vs := g.verdicts(); len(vs) > 0 {
		first, last := g.points[0], g.points[len(g.points)-1]
		fmt.Fprintf(w, "\n%s against %s (limit %gx; the verdict is on the figures relative to each checkpoint's ping)\n", last.label, first.label, growthLimit)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "request\tops/s slower\tvs ping\tp50 longer\tvs ping\tverdict")
		for _, v := range vs {
			fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%s\n", v.kind, v.slowdown, v.slowdownVsPing, v.p50Growth, v.p50GrowthVsPing, verdictText(v.pass))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	points := g.points
	if g.restarted != nil {
		points = append(points[:len(points):len(points)], *g.restarted)
	}
	fmt.Fprintln(w, "\nserver at each checkpoint (MiB; du is the space the data directory's files take, dbStats's sizes are the logical ones)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checkpoint\tdocs\tload docs/s\tslowest\tsettled in\tRSS\tpeak RSS\tdu\tsst\tWAL\tWAL du\tWAL files\tballast\tother\tdataSize\tstorageSize\tindexSize\tdu/(data+index)\tdbStats took")
	for _, p := range points {
		load, slowest := "-", "-"
		if p.loadDocs > 0 && p.load > 0 {
			load, slowest = fmt.Sprintf("%.0f", float64(p.loadDocs)/p.load.Seconds()), fmt.Sprintf("%.0f", p.slowestLoad)
		}
		logical := p.stats.dataSize + p.stats.indexSize
		amp := "-"
		if logical > 0 {
			amp = fmt.Sprintf("%.2f", float64(p.disk.allocated)/float64(logical))
		}
		settled := "-"
		if p.samples != nil {
			settled = p.settle.Round(time.Second).String()
			if !p.settled {
				settled = "busy after " + settled
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", p.label, p.docs, load, slowest, settled,
			mib(p.mem.rss), mib(p.mem.hwm), mib(p.disk.allocated), mib(p.disk.sst), mib(p.disk.wal), mib(p.disk.walAllocated), p.disk.walFiles,
			mib(p.disk.ballast), mib(p.disk.other),
			mib(p.stats.dataSize), mib(p.stats.storageSize), mib(p.stats.indexSize), amp, p.stats.took.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if g.restarted != nil {
		fmt.Fprintf(w, "restart over the same data directory took %v\n", g.restartTook.Round(time.Millisecond))
	}

	fmt.Fprintln(w, "\nblock cache over each checkpoint's requests (serverStatus lethe.blockCache; a miss reads the block from its file)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checkpoint\tbudget MiB\theld MiB\thits\tmisses\thit ratio")
	for _, p := range g.points {
		if !p.cache.ok {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", p.label)
			continue
		}
		ratio := "-"
		if r := p.cache.hitRatio(); r >= 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", p.label, mib(p.cache.maxBytes), mib(p.cache.bytes), p.cache.hits, p.cache.misses, ratio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\noplog (local.oplog.rs)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checkpoint\tentries\tMiB (BSON)\tof the bound\toldest ts\toldest wall\tnewest ts")
	for _, p := range points {
		of := "-"
		if g.oplogMiB > 0 {
			of = fmt.Sprintf("%.0f%%", 100*float64(p.oplog.bytes)/float64(g.oplogMiB<<20))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d.%d\t%s\t%d.%d\n", p.label, p.oplog.entries, mib(p.oplog.bytes), of,
			p.oplog.oldest.T, p.oplog.oldest.I, p.oplog.oldestWallClock.UTC().Format(time.TimeOnly), p.oplog.newest.T, p.oplog.newest.I)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(g.points) >= 2 {
		first, last := g.points[0], g.points[len(g.points)-1]
		trimmed := first.oplog.oldest.Before(last.oplog.oldest)
		fmt.Fprintf(w, "oplog trimmed between %s and %s (full): %v\n", first.label, last.label, trimmed)
		grew := last.mem.rss - first.mem.rss
		fmt.Fprintf(w, "RSS grew %s from %s to %s, peak %s, against a block cache of %d MiB: %s\n",
			mibText(grew), first.label, last.label, mibText(last.mem.hwm), g.cacheMiB, verdictText(grew <= g.cacheMiB<<20))
	}
	return nil
}

// mib writes a byte count in MiB, without the unit, for tables.
func mib(n int64) string {
	return fmt.Sprintf("%.1f", float64(n)/(1<<20))
}

// The JSON form of the growth workload.
type (
	jsonGrowth struct {
		CacheMiB    int64              `json:"cache_mib"`
		OplogMiB    int64              `json:"oplog_mib"`
		Points      []jsonGrowthPoint  `json:"checkpoints"`
		Restarted   *jsonGrowthPoint   `json:"restarted,omitempty"`
		RestartSecs float64            `json:"restart_s,omitempty"`
		Verdicts    []jsonGrowthJudged `json:"verdicts,omitempty"`
	}
	jsonGrowthPoint struct {
		Label         string                `json:"label"`
		Loaded        int                   `json:"loaded"`
		Docs          int64                 `json:"docs"`
		LoadSecs      float64               `json:"load_s,omitempty"`
		LoadDocs      int                   `json:"load_docs,omitempty"`
		SlowestLoad   float64               `json:"slowest_load_docs_per_s,omitempty"`
		SettleSecs    float64               `json:"settle_s"`
		Settled       bool                  `json:"settled"`
		Requests      map[string]jsonSample `json:"requests,omitempty"`
		CacheHits     int64                 `json:"block_cache_hits"`
		CacheMisses   int64                 `json:"block_cache_misses"`
		RSS           int64                 `json:"rss_bytes"`
		PeakRSS       int64                 `json:"peak_rss_bytes"`
		DiskAllocated int64                 `json:"du_bytes"`
		SST           int64                 `json:"sst_bytes"`
		WAL           int64                 `json:"wal_bytes"`
		WALAllocated  int64                 `json:"wal_du_bytes"`
		WALFiles      int                   `json:"wal_files"`
		Ballast       int64                 `json:"ballast_bytes"`
		Other         int64                 `json:"other_bytes"`
		DataSize      int64                 `json:"data_size"`
		StorageSize   int64                 `json:"storage_size"`
		IndexSize     int64                 `json:"index_size"`
		OplogEntries  int64                 `json:"oplog_entries"`
		OplogBytes    int64                 `json:"oplog_bytes"`
		OplogOldest   uint32                `json:"oplog_oldest_t"`
	}
	jsonGrowthJudged struct {
		Request         string  `json:"request"`
		Slowdown        float64 `json:"ops_slowdown"`
		SlowdownVsPing  float64 `json:"ops_slowdown_vs_ping"`
		P50Growth       float64 `json:"p50_growth"`
		P50GrowthVsPing float64 `json:"p50_growth_vs_ping"`
		Pass            bool    `json:"pass"`
	}
)

func (g *growthRun) toJSON() *jsonGrowth {
	point := func(p growthPoint) jsonGrowthPoint {
		jp := jsonGrowthPoint{Label: p.label, Loaded: p.loaded, Docs: p.docs, LoadSecs: p.load.Seconds(), LoadDocs: p.loadDocs,
			SlowestLoad: p.slowestLoad, SettleSecs: p.settle.Seconds(), Settled: p.settled, RSS: p.mem.rss, PeakRSS: p.mem.hwm, DiskAllocated: p.disk.allocated,
			SST: p.disk.sst, WAL: p.disk.wal, WALAllocated: p.disk.walAllocated, WALFiles: p.disk.walFiles, Ballast: p.disk.ballast, Other: p.disk.other,
			DataSize: p.stats.dataSize, StorageSize: p.stats.storageSize, IndexSize: p.stats.indexSize,
			OplogEntries: p.oplog.entries, OplogBytes: p.oplog.bytes, OplogOldest: p.oplog.oldest.T,
			CacheHits: p.cache.hits, CacheMisses: p.cache.misses}
		if len(p.samples) > 0 {
			jp.Requests = make(map[string]jsonSample)
			for k, s := range p.samples {
				jp.Requests[k] = toJSONSample(s)
			}
		}
		return jp
	}
	out := &jsonGrowth{CacheMiB: g.cacheMiB, OplogMiB: g.oplogMiB, Points: []jsonGrowthPoint{}}
	for _, p := range g.points {
		out.Points = append(out.Points, point(p))
	}
	if g.restarted != nil {
		r := point(*g.restarted)
		out.Restarted, out.RestartSecs = &r, g.restartTook.Seconds()
	}
	for _, v := range g.verdicts() {
		out.Verdicts = append(out.Verdicts, jsonGrowthJudged{Request: v.kind, Slowdown: v.slowdown, SlowdownVsPing: v.slowdownVsPing,
			P50Growth: v.p50Growth, P50GrowthVsPing: v.p50GrowthVsPing, Pass: v.pass})
	}
	return out
}
