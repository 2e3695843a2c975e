// llmd-scorer: llm-d's KV-cache indexer (github.com/llm-d/llm-d-kv-cache, published on the Go proxy as
// github.com/llm-d/llm-d-kv-cache-manager v0.5.0) subscribed to pagoda replicas' KV-cache event streams, with a
// tiny HTTP interface that scores pods for a list of token ids.
//
// It wires llm-d's own packages the way its Indexer does, minus tokenization:
//   - kvevents.Pool + kvevents.SubscriberManager: one ZMQ SUB per pod (connect), topic filter "kv@";
//     the pod and model come from the topic, which must be "kv@<pod>@<model>";
//   - kvblock.NewChunkedTokenDatabase (block size, hash seed) + kvblock in-memory index: BlockStored
//     events are indexed under llm-d's own keys, recomputed from the event's token_ids;
//   - kvcache.LongestPrefixScorer with the default medium weights (gpu 1.0, cpu 0.8).
//
// pkg/kvcache's Indexer facade (indexer.go) is left out at build time with `go build -overlay` (see
// scripts/fleet/llmd-test.sh): it is the only file of that package that pulls in the tokenizer pool (cgo,
// libtokenizers.a from daulet/tokenizers) and the chat-template preprocessor (cgo, embedded CPython). Token ids
// come from pagoda's render endpoint instead, as a router should get them.
//
// Usage:
//
//	llmd-scorer -listen 127.0.0.1:9400 -model SmolLM2 -block-size 16 \
//	    -pod pod-a=tcp://127.0.0.1:5557 -pod pod-b=tcp://127.0.0.1:5567 [-render http://127.0.0.1:8000]
//
// HTTP:
//
//	POST /score {"token_ids": [..]}            -> {"scores": {"pod-b": 15.2}, "blocks": 19}
//	POST /score {"prompt": "..."}              (needs -render: token ids from <render>/v1/completions/render)
//	GET  /pods                                 -> subscribed pods and endpoints
//
// Optional body fields: "model" (defaults to -model; it must equal the topic's <model> part, since llm-d seeds its
// key chain with the model name) and "pods" (restrict scoring to these pod ids).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

type podFlags []string

func (p *podFlags) String() string     { return strings.Join(*p, ",") }
func (p *podFlags) Set(v string) error { *p = append(*p, v); return nil }

type scoreRequest struct {
	TokenIDs []uint32 `json:"token_ids"`
	Prompt   string   `json:"prompt"`
	Model    string   `json:"model"`
	Pods     []string `json:"pods"`
}

type scoreResponse struct {
	Scores map[string]float64 `json:"scores"`
	Blocks int                `json:"blocks"`
	Tokens int                `json:"tokens"`
}

func main() {
	var pods podFlags
	listen := flag.String("listen", "127.0.0.1:9400", "HTTP listen address")
	model := flag.String("model", "", "model name, as in the topic kv@<pod>@<model> (required)")
	blockSize := flag.Int("block-size", 16, "tokens per block: must equal pagoda's --block-size")
	hashSeed := flag.String("hash-seed", "", "llm-d's HashSeed (vLLM's PYTHONHASHSEED); any value works if constant")
	topic := flag.String("topic-filter", "kv@", "ZMQ subscription prefix")
	concurrency := flag.Int("concurrency", 4, "event pool workers")
	render := flag.String("render", "", "base URL of a replica whose /v1/completions/render tokenizes prompts")
	verbose := flag.Int("v", 0, "log verbosity (4: llm-d debug, 5: trace)")
	flag.Var(&pods, "pod", "pod=endpoint, e.g. pod-a=tcp://127.0.0.1:5557 (repeat)")
	flag.Parse()
	if *model == "" || len(pods) == 0 {
		fmt.Fprintln(os.Stderr, "need -model and at least one -pod")
		os.Exit(2)
	}

	logger := zap.New(zap.UseDevMode(*verbose > 0), zap.Level(uberzap.NewAtomicLevelAt(zapcore.Level(-*verbose))))
	log.SetLogger(logger)
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logger))
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; cancel() }()

	index, err := kvblock.NewIndex(ctx, kvblock.DefaultIndexConfig())
	must(err)
	// One token processor for both sides, so event keys and query keys agree (llm-d's online example gives
	// the events pool a default-config processor regardless of BLOCK_SIZE).
	tp := kvblock.NewChunkedTokenDatabase(&kvblock.TokenProcessorConfig{BlockSize: *blockSize, HashSeed: *hashSeed})
	scorerCfg := kvcache.DefaultKVBlockScorerConfig()
	scorer, err := kvcache.NewKVBlockScorer(scorerCfg)
	must(err)

	pool := kvevents.NewPool(&kvevents.Config{TopicFilter: *topic, Concurrency: *concurrency}, index, tp)
	pool.Start(ctx)
	subs := kvevents.NewSubscriberManager(pool)
	for _, p := range pods {
		id, ep, ok := strings.Cut(p, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "bad -pod", p)
			os.Exit(2)
		}
		must(subs.EnsureSubscriber(ctx, id, ep, *topic, true))
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/pods", func(w http.ResponseWriter, r *http.Request) {
		ids, eps := subs.GetActiveSubscribers()
		writeJSON(w, map[string]any{"pods": ids, "endpoints": eps})
	})
	mux.HandleFunc("/score", func(w http.ResponseWriter, r *http.Request) {
		var req scoreRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		if req.Model == "" {
			req.Model = *model
		}
		if len(req.TokenIDs) == 0 && req.Prompt != "" {
			if *render == "" {
				http.Error(w, "prompt given but no -render URL", http.StatusBadRequest)
				return
			}
			req.TokenIDs, err = renderTokens(*render, req.Model, req.Prompt)
			if err != nil {
				http.Error(w, "render: "+err.Error(), http.StatusBadGateway)
				return
			}
		}
		// As kvcache.Indexer.GetPodScores does after tokenizing.
		keys := tp.TokensToKVBlockKeys(kvblock.EmptyBlockHash, req.TokenIDs, req.Model)
		resp := scoreResponse{Scores: map[string]float64{}, Blocks: len(keys), Tokens: len(req.TokenIDs)}
		if len(keys) > 0 {
			keyToPods, err := index.Lookup(ctx, keys, sets.New(req.Pods...))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp.Scores, err = scorer.Score(keys, keyToPods)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		writeJSON(w, resp)
	})
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		defer c()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "llmd-scorer: listening on %s, model %q, block size %d, pods %v\n",
		*listen, *model, *blockSize, []string(pods))
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	subs.Shutdown(ctx)
	pool.Shutdown(context.Background())
}

// renderTokens asks a replica for the token ids it would prefill for prompt.
func renderTokens(base, model, prompt string) ([]uint32, error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt})
	resp, err := http.Post(strings.TrimRight(base, "/")+"/v1/completions/render", "application/json",
		bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	var out []struct {
		TokenIDs []uint32 `json:"token_ids"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty render")
	}
	return out[0].TokenIDs, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
