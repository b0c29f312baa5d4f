// Building the console's DOM: attributes set as attributes, children appended as nodes or as
// text. Nothing here parses markup, so whatever a run produced can only ever be text.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}
