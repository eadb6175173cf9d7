package core

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// MediaTool finds the media (uploads and generated files) the agent may see and hands one to the
// model.
type MediaTool struct{}

// Spec declares the tool.
func (MediaTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.MediaTool",
		Name:        "media",
		DisplayName: "Media",
		Description: "Find media files (uploads, attachments, generated files) available to this agent and load one.",
		Category:    tools.CategoryData,
		Icon:        "image",
		Base:        &pagingBase,
		Operations: []tools.Operation{
			readOp("search", "List media, newest first, optionally filtered by text and kind."),
			readOp("get_media", "Return one media file: its metadata, and its content when the model can read it."),
		},
		Params: []tools.Param{
			{Name: "query", Type: tools.TypeString, Description: "search: text matched against file names (case-insensitive substring).", Required: tools.Optional()},
			{
				Name: "kind", Type: tools.TypeString, Description: "search: only media of this kind.",
				Enum: []string{"image", "audio", "video", "document", "other"}, Required: tools.Optional(),
			},
			{
				Name: "media_id", Type: tools.TypeString, Description: "get_media: the media id (med_…, as search lists it).",
				Required: tools.RequiredFor("get_media"),
			},
		},
	}
}

// MaxMediaText is how many bytes of a text-like file get_media hands to the model.
const MaxMediaText = 32 << 10

// MediaSource is what the media tool reads of the media an agent may see; *store.Store
// satisfies it. Agent fails with svcerr.ErrNotFound for an unknown agent, AgentMediaAsset with
// svcerr.ErrNotFound for an asset the agent may not see in the task's chat tree (or none at all).
type MediaSource interface {
	Agent(ctx context.Context, id, viewer int64) (*store.Agent, error)
	SearchAgentMedia(ctx context.Context, q store.AgentMediaQuery) ([]store.MediaAsset, error)
	AgentMediaAsset(ctx context.Context, principalID, taskID int64, id string) (*store.MediaAsset, error)
}

// MediaFiles opens the file of an asset (*media.Service). The tool treats any error it returns,
// whatever its category, as an infrastructure failure: the asset was found, its file should be
// there.
type MediaFiles interface {
	Open(ctx context.Context, a *store.MediaAsset) (io.ReadSeekCloser, error)
}

// mediaExec runs the media tool: search and get_media over the media the calling agent may see
// in the current chat: the assets of the agent's owner, and those produced in or attached to
// the chat's tree (its root chat and every sub-agent chat below it). get_media hands the model
// the content of text-like files (up to MaxMediaText bytes) and the metadata of everything else.
type mediaExec struct {
	media MediaSource
	files MediaFiles
}

// mediaEntry is one asset as the model sees it.
type mediaEntry struct {
	ID        string     `json:"id"`
	Filename  string     `json:"filename"`
	Kind      string     `json:"kind"`
	MimeType  string     `json:"mime_type"`
	Size      int64      `json:"size"`
	Width     *int       `json:"width,omitempty"`
	Height    *int       `json:"height,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func toMediaEntry(a *store.MediaAsset) mediaEntry {
	return mediaEntry{ID: a.ID, Filename: a.Filename, Kind: a.Kind, MimeType: a.MimeType, Size: a.Size,
		Width: a.Width, Height: a.Height, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}
}

// Execute runs one call. Bad arguments and unknown or invisible ids are ToolErrors the model
// sees; other errors are infrastructure failures.
func (x *mediaExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	switch call.Operation {
	case "search", "get_media":
	default:
		return tools.Result{}, &tools.ToolError{Msg: "unknown operation " + call.Operation}
	}
	if x.media == nil {
		return tools.Result{}, &tools.ToolError{Msg: "media are not available"}
	}
	ag, err := x.media.Agent(ctx, call.AgentID, 0)
	if err != nil {
		return tools.Result{}, toolError(err)
	}
	if call.Operation == "search" {
		return x.search(ctx, call, ag.PrincipalID)
	}
	return x.get(ctx, call, ag.PrincipalID)
}

func (x *mediaExec) search(ctx context.Context, call tools.Call, principalID int64) (tools.Result, error) {
	q := store.AgentMediaQuery{PrincipalID: principalID, TaskID: call.TaskID, Page: 1, PerPage: limits.DefaultPerPage}
	var err error
	if q.Text, err = optString(call.Args, "query", 200); err != nil {
		return tools.Result{}, err
	}
	q.Text = strings.TrimSpace(q.Text)
	if q.Kind, err = optString(call.Args, "kind", 20); err != nil {
		return tools.Result{}, err
	}
	switch q.Kind {
	case "", store.MediaKindImage, store.MediaKindAudio, store.MediaKindVideo, store.MediaKindDocument, store.MediaKindOther:
	default:
		return tools.Result{}, &tools.ToolError{Msg: "kind must be one of image, audio, video, document, other"}
	}
	page, err := intInRange(call.Args, "page", 1, math.MaxInt32)
	if err != nil {
		return tools.Result{}, err
	}
	per, err := intInRange(call.Args, "per_page", 1, limits.MaxPerPage)
	if err != nil {
		return tools.Result{}, err
	}
	if page != nil {
		q.Page = *page
	}
	if per != nil {
		q.PerPage = *per
	}
	list, err := x.media.SearchAgentMedia(ctx, q)
	if err != nil {
		return tools.Result{}, err
	}
	entries := make([]mediaEntry, 0, len(list))
	for i := range list {
		entries = append(entries, toMediaEntry(&list[i]))
	}
	return jsonResult(map[string]any{"page": q.Page, "per_page": q.PerPage, "count": len(entries), "media": entries})
}

func (x *mediaExec) get(ctx context.Context, call tools.Call, principalID int64) (tools.Result, error) {
	id, err := optString(call.Args, "media_id", store.MaxMediaIDLen+1)
	if err != nil {
		return tools.Result{}, err
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return tools.Result{}, &tools.ToolError{Msg: "media_id is required (a med_… id from search)"}
	}
	a, err := x.media.AgentMediaAsset(ctx, principalID, call.TaskID, id)
	if errors.Is(err, svcerr.ErrNotFound) {
		return tools.Result{}, &tools.ToolError{Msg: "no media " + id + " is available to this agent"}
	}
	if err != nil {
		return tools.Result{}, err
	}
	out := map[string]any{"media": toMediaEntry(a)}
	if !textLike(a.MimeType) {
		out["content_included"] = false
		out["note"] = "The content of " + a.Kind + " files (" + a.MimeType + ") cannot be read through this tool; only its metadata is shown."
		return jsonResult(out)
	}
	if x.files == nil {
		return tools.Result{}, &tools.ToolError{Msg: "media files are not available"}
	}
	f, err := x.files.Open(ctx, a)
	if err != nil {
		return tools.Result{}, err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, MaxMediaText+1))
	if err != nil {
		return tools.Result{}, err
	}
	truncated := len(buf) > MaxMediaText
	if truncated {
		buf = buf[:MaxMediaText]
		for k := 0; k < utf8.UTFMax-1 && len(buf) > 0; k++ { // cut at a rune boundary
			if r, _ := utf8.DecodeLastRune(buf); r != utf8.RuneError {
				break
			}
			buf = buf[:len(buf)-1]
		}
	}
	out["content_included"] = true
	out["content"] = strings.ToValidUTF8(string(buf), "\uFFFD")
	out["truncated"] = truncated
	if truncated {
		out["note"] = "Only the first " + strconv.Itoa(MaxMediaText) + " bytes of the file are shown."
	}
	return jsonResult(out)
}

// textLike reports whether the model can read a file of MIME type mt as text.
func textLike(mt string) bool {
	switch mt {
	case "text/plain", "text/csv", "text/markdown", "application/json":
		return true
	}
	return strings.HasPrefix(mt, "text/")
}

// optString reads an optional string argument of at most max bytes ("" when absent or null).
func optString(args map[string]any, name string, maxLen int) (string, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", &tools.ToolError{Msg: name + " must be a string"}
	}
	if len(s) > maxLen {
		return "", &tools.ToolError{Msg: name + " is too long"}
	}
	return s, nil
}
