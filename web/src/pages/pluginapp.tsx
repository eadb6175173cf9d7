// A plugin's frontend bundle (its frontendEntry), shown in a sandboxed frame. The page is code
// the plugin's author wrote; the frame's sandbox (scripts only, no allow-same-origin) and the
// server's policy for /plugins/<slug>/ (CSP `sandbox allow-scripts`) give it an opaque origin,
// so it runs without the console's session, cookies, storage or page.
import { prefix } from "../api";
import { PageHeader } from "../ui";

export function PluginApp(props: { slug: string }) {
  const src = `${prefix}/plugins/${encodeURIComponent(props.slug)}/`;
  return (
    <>
      <PageHeader title={`Plugin ${props.slug}`} back={{ to: "/plugins", label: "Plugins" }} />
      <p class="muted small">This page is the plugin's own code. It runs sandboxed: it cannot act with your session or read this console.</p>
      <iframe class="plugin-frame" title={`Plugin ${props.slug}`} src={src} sandbox="allow-scripts" referrerpolicy="no-referrer" />
    </>
  );
}
