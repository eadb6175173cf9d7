package core

import "github.com/agentsvc/svc/tools"

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
			op("search", "List media, newest first, optionally filtered by text and kind."),
			op("get_media", "Return one media file: its metadata, and its content when the model can read it."),
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
