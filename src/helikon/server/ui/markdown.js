// Markdown to DOM nodes, safely: every piece of text goes in with textContent, never as markup,
// and a link is kept only for http(s) and mailto addresses. A model's answer or a tool's result
// can hold `<script>` or `<img onerror>`: here it is text.

const SAFE_LINK = /^(https?:|mailto:)/i;

function inline(text, into) {
  // `code`, **bold**, *em*, [text](url), in one left-to-right pass.
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > at) into.append(text.slice(at, match.index));
    const token = match[0];
    let node;
    if (match[1]) {
      node = document.createElement("code");
      node.textContent = token.slice(1, -1);
    } else if (match[2]) {
      node = document.createElement("strong");
      inline(token.slice(2, -2), node);
    } else if (match[3]) {
      node = document.createElement("em");
      inline(token.slice(1, -1), node);
    } else {
      const label = token.slice(1, token.indexOf("]("));
      const href = token.slice(token.indexOf("](") + 2, -1);
      if (SAFE_LINK.test(href)) {
        node = document.createElement("a");
        node.href = href;
        node.rel = "noopener noreferrer";
        node.target = "_blank";
        node.textContent = label;
      } else {
        node = document.createTextNode(token);
      }
    }
    into.append(node);
    at = match.index + token.length;
  }
  if (at < text.length) into.append(text.slice(at));
}

export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  const lines = String(source ?? "").split("\n");
  let paragraph = [];
  let list = null;

  const flush = () => {
    if (paragraph.length) {
      const p = document.createElement("p");
      inline(paragraph.join("\n"), p);
      fragment.append(p);
      paragraph = [];
    }
  };
  const endList = () => { list = null; };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^```/);
    if (fence) {
      flush(); endList();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) code.push(lines[i++]);
      const pre = document.createElement("pre");
      const inner = document.createElement("code");
      inner.textContent = code.join("\n");
      pre.append(inner);
      fragment.append(pre);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)$/);
    if (heading) {
      flush(); endList();
      const h = document.createElement(`h${Math.min(heading[1].length + 2, 6)}`);
      inline(heading[2], h);
      fragment.append(h);
    } else if (item) {
      flush();
      if (!list) {
        list = document.createElement(/^\s*\d+\./.test(line) ? "ol" : "ul");
        fragment.append(list);
      }
      const li = document.createElement("li");
      inline(item[1], li);
      list.append(li);
    } else if (line.startsWith(">")) {
      flush(); endList();
      const quote = document.createElement("blockquote");
      inline(line.replace(/^>\s?/, ""), quote);
      fragment.append(quote);
    } else if (!line.trim()) {
      flush(); endList();
    } else {
      endList();
      paragraph.push(line);
    }
  }
  flush();
  return fragment;
}
