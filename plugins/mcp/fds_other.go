//go:build !unix

package mcp

// markCloseOnExec does nothing where descriptors are not inherited by default.
func markCloseOnExec() {}
