package tikvkv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tikv/client-go/v2/util/codec"
)

// regionStats reads PD's statistics of the regions that hold a range, from
// PD's HTTP API (served on the same address as its gRPC one): the sum of
// their approximate sizes, which TiKV reports to PD as regions grow, and
// how many they are. Client-go's PD client offers no region sizes.
type regionStats struct {
	addrs  []string // PD endpoints, host:port
	client *http.Client
}

func newRegionStats(addrs []string) *regionStats {
	return &regionStats{addrs: addrs, client: &http.Client{Timeout: 5 * time.Second}}
}

// statsReply is the part of PD's /pd/api/v1/stats/region answer read here;
// storage_size is in MiB.
type statsReply struct {
	Count       int   `json:"count"`
	StorageSize int64 `json:"storage_size"`
}

// size returns the approximate bytes of the regions that hold [plo, phi)
// (stored keys) and their number. PD keeps region boundaries in the
// memcomparable encoding client-go gives keys (codec.EncodeBytes), so the
// bounds go in that form.
func (r *regionStats) size(ctx context.Context, plo, phi []byte) (int64, int, error) {
	q := url.Values{
		"start_key": {string(codec.EncodeBytes(nil, plo))},
		"end_key":   {string(codec.EncodeBytes(nil, phi))},
	}.Encode()
	var errs []error
	for _, a := range r.addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/pd/api/v1/stats/region?"+q, nil)
		if err != nil {
			return 0, 0, fmt.Errorf("tikvkv: region statistics: %w", err)
		}
		resp, err := r.client.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st statsReply
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("PD %s answered %s", a, resp.Status))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("PD %s: %w", a, err))
			continue
		}
		return st.StorageSize << 20, st.Count, nil
	}
	return 0, 0, fmt.Errorf("tikvkv: region statistics from PD %v: %v", r.addrs, errs)
}
