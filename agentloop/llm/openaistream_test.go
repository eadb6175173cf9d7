package llm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// TestOpenAIStreamAnswerBound: a server that keeps streaming past maxStreamAnswer is cut off
// with errChunkBreak instead of growing the answer without end.
func TestOpenAIStreamAnswerBound(t *testing.T) {
	t.Parallel()
	piece := strings.Repeat("x", 4<<20)
	var b strings.Builder
	for range maxStreamAnswer/len(piece) + 1 {
		b.WriteString(openaiChunk(`{"content":"`+piece+`"}`, "null"))
	}
	var deltas int
	_, err := readOpenAIStream(strings.NewReader(b.String()), func(Delta) { deltas++ })
	if !errors.Is(err, errChunkBreak) {
		t.Fatalf("err = %v, want errChunkBreak", err)
	}
	if deltas != maxStreamAnswer/len(piece) {
		t.Errorf("%d deltas reported before the bound, want %d", deltas, maxStreamAnswer/len(piece))
	}
}

// FuzzReadOpenAIStream: whatever a model server streams, the reader returns an answer or an
// error, never panics, and never reports more text than the answer it accumulated.
func FuzzReadOpenAIStream(f *testing.F) {
	f.Add(openaiChunk(`{"role":"assistant","content":"Hi"}`, "null") + openaiChunk(`{}`, `"stop"`) + openaiUsageChunk + sseDone)
	f.Add(openaiChunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"a","arguments":"{\"x\""}}]}`, "null") +
		openaiChunk(`{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}`, `"tool_calls"`))
	f.Add("data: {\"error\":{\"message\":\"x\",\"code\":503}}\n\n")
	f.Add("event: x\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"r\",\"reasoning\":1}}]}\ndata: \n\n: c\n\n")
	f.Add("data: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, stream string) {
		var text int
		ans, err := readOpenAIStream(strings.NewReader(stream), func(d Delta) { text += len(d.Text) + len(d.Reasoning) })
		if err != nil {
			return
		}
		if text != len(ans.content)+len(ans.reasoning) {
			t.Fatalf("reported %d bytes, accumulated %d", text, len(ans.content)+len(ans.reasoning))
		}
		c := ans.completion()
		if len(c.Choices[0].Message.ToolCalls) != len(ans.args) || len(ans.args) > maxStreamToolIdx+1 {
			t.Fatalf("%d tool calls, %d argument buffers", len(c.Choices[0].Message.ToolCalls), len(ans.args))
		}
	})
}

// benchStream is a streamed answer of n content chunks (a real model sends one per token or
// two), then the finish, the usage report and [DONE].
func benchStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString(openaiChunk(`{"role":"assistant","content":""}`, "null"))
	for i := range n {
		fmt.Fprintf(&b, "%s", openaiChunk(fmt.Sprintf(`{"content":"tok%d "}`, i), "null"))
	}
	b.WriteString(openaiChunk(`{}`, `"stop"`))
	b.WriteString(openaiUsageChunk)
	b.WriteString(sseDone)
	return b.Bytes()
}

// BenchmarkOpenAIStream reads the same 200-chunk stream with the driver's reader and, as the
// baseline in the same run, with the SDK's ssestream.Stream and ChatCompletionAccumulator (what
// the driver used before), alternated: each op is one read of each; reader-µs and sdk-µs are
// their times per stream, x-sdk the SDK's time ÷ the reader's. Allocations are both sides'.
func BenchmarkOpenAIStream(b *testing.B) {
	stream := benchStream(200)
	sdk := func() {
		res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(stream))}
		st := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			if !acc.AddChunk(st.Current()) {
				b.Fatal("chunk refused")
			}
		}
		if st.Err() != nil || acc.Choices[0].FinishReason != "stop" {
			b.Fatalf("sdk: %v", st.Err())
		}
	}
	own := func() {
		ans, err := readOpenAIStream(bytes.NewReader(stream), func(Delta) {})
		if err != nil || ans.finish != "stop" {
			b.Fatalf("reader: %v", err)
		}
	}
	var tOwn, tSDK time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		own()
		t1 := time.Now()
		sdk()
		tOwn += t1.Sub(t0)
		tSDK += time.Since(t1)
	}
	b.ReportMetric(float64(tOwn.Microseconds())/float64(b.N), "reader-µs")
	b.ReportMetric(float64(tSDK.Microseconds())/float64(b.N), "sdk-µs")
	b.ReportMetric(float64(tSDK)/float64(tOwn), "x-sdk")
}
