#!/usr/bin/env python3
"""Writes expected-<group>.jsonl: what a user must see of every recorded
Status of <group>.jsonl once a spawn stored it, read off the payloads with
Python's own JSON and HTML libraries (independently of the Go code under
test). The rules applied are the product's (docs/sources/mastodon.md):

  id           the status's uri (a reblog's own uri)
  author       account.acct lowercased, qualified with the reading
               instance's domain when it has none
  author_id    account.uri (Mastodon 4.2 and later)
  text         the content warning, a blank line, then the content as its
               author wrote it: a paragraph break is a blank line, a <br> a
               line break (Mastodon's formatter turns them into <p> and
               <br>), list items and block quotes start lines of their own,
               other white space is folded into one space; then, after a
               blank line and each on a line of its own, the preview card's
               title, the card's URL unless the words hold it, and every
               media attachment's description (the alt text), as the
               bluesky source keeps a link card's title and images' alt text
  url          url, else uri
  lang         language, lowercased
  published_at created_at
  edited_at    edited_at when the status was edited (it may arrive so)
  reply_to     the parent's uri when the parent is in the group and the
               reading account may see it (public or unlisted)
  thread_id    the first status of the thread, when the whole chain up to
               it is in the group and visible
  links        the content's <a href> that are not mentions or hashtags,
               then the card's url, without repeats, http(s) only

and whether Mastodon streams it on the public stream (public_stream: public,
not a reblog, not a reply to another account) and under which followed tags
it reaches the home timeline (home_tags: public, not a reblog).

Run it from this directory: python3 expect.py
"""

import html.parser
import json

# group -> the domain of the instance the statuses were read from.
GROUPS = {
    "documentation": "mastodon.social",
    "mastodonpy": "localhost:3000",
    "publictimeline": "mastodon.social",
}

# Elements whose content a reader never sees.
HIDDEN = {"script", "style", "head", "template", "noscript", "iframe", "object", "svg", "math", "title"}
# Elements that do not separate words.
INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "mark", "q", "s",
    "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "del", "ins", "font", "tt",
    "big", "strike", "wbr",
}
# Elements that end a paragraph, and elements that end a line.
PARAGRAPH = {"p", "blockquote", "pre", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6"}
LINE = {"br", "li", "div", "tr"}

SPACE, NEWLINE, BLANK = 1, 2, 3
SEPARATORS = {SPACE: " ", NEWLINE: "\n", BLANK: "\n\n"}


class Lines(html.parser.HTMLParser):
    """The text of an HTML fragment, with its paragraphs and line breaks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out = []
        self.pending = 0
        self.hidden = 0
        self.pre = 0

    def brk(self, strength):
        self.pending = max(self.pending, strength)

    def tag(self, name, start):
        if name in HIDDEN:
            self.brk(SPACE)
            if start:
                self.hidden += 1
            elif self.hidden:
                self.hidden -= 1
            return
        if name == "pre" and start is not None:
            self.pre += 1 if start else -1 if self.pre else 0
        if name in PARAGRAPH:
            self.brk(BLANK)
        elif name in LINE:
            self.brk(NEWLINE)
        elif name not in INLINE:
            self.brk(SPACE)

    def handle_starttag(self, name, attrs):
        self.tag(name, True)

    def handle_startendtag(self, name, attrs):
        # A self-closing tag opens nothing: not a hidden element, not
        # preformatted text.
        if name in HIDDEN:
            self.brk(SPACE)
            return
        self.tag(name, None)

    def handle_endtag(self, name):
        self.tag(name, False)

    def handle_data(self, data):
        if self.hidden:
            return
        word = []
        for ch in data:
            if ch.isspace():
                if word:
                    self.word("".join(word))
                    word = []
                self.brk(NEWLINE if self.pre and ch == "\n" else SPACE)
            else:
                word.append(ch)
        if word:
            self.word("".join(word))

    def word(self, w):
        if self.out and self.pending:
            self.out.append(SEPARATORS[self.pending])
        self.pending = 0
        self.out.append(w)

    def text(self):
        return "".join(self.out)


def lines(fragment):
    p = Lines()
    p.feed(fragment or "")
    p.close()
    return p.text()


class Links(html.parser.HTMLParser):
    """The href of every <a> that is not a mention or a hashtag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []

    def handle_starttag(self, name, attrs):
        if name != "a":
            return
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        rels = (a.get("rel") or "").split()
        if "mention" in classes or "hashtag" in classes or "tag" in rels:
            return
        if a.get("href"):
            self.hrefs.append(a["href"])


def web(u):
    u = (u or "").strip()
    return u if u.startswith("http://") or u.startswith("https://") else ""


def status_text(st):
    text = lines(st.get("content"))
    extra = []
    card = st.get("card") or {}
    if (card.get("title") or "").strip():
        extra.append(card["title"].strip())
    if web(card.get("url")) and web(card.get("url")) not in text:
        extra.append(web(card["url"]))
    for m in st.get("media_attachments") or []:
        if (m.get("description") or "").strip():
            extra.append(m["description"].strip())
    extra = extra[:16]
    if extra:
        text = "\n".join(extra) if not text.strip() else text + "\n\n" + "\n".join(extra)
    spoiler = lines(st.get("spoiler_text")).strip()
    if spoiler and text:
        return spoiler + "\n\n" + text
    return spoiler or text


def status_links(st):
    skip = {(m.get("url") or "").strip() for m in st.get("mentions") or []}
    skip |= {(t.get("url") or "").strip() for t in st.get("tags") or []}
    p = Links()
    p.feed(st.get("content") or "")
    out = []
    for u in p.hrefs + [(st.get("card") or {}).get("url")]:
        u = web(u)
        if u and u not in skip and u not in out:
            out.append(u)
    return out


def author(acct, domain):
    acct = (acct or "").lstrip("@")
    if acct and "@" not in acct:
        acct += "@" + domain
    return acct.lower()


def expect(group, domain):
    samples = [json.loads(line)["entity"] for line in open(group + ".jsonl", encoding="utf-8")]
    by_id = {st["id"]: st for st in samples}

    def visible(st):
        return st.get("visibility") in ("public", "unlisted")

    def parent_of(st):
        p = by_id.get(st.get("in_reply_to_id"))
        return p if p is not None and visible(p) else None

    out = []
    for st in samples:
        seen = {"id": st["uri"], "author": author(st["account"].get("acct") or st["account"].get("username"), domain)}
        if st["account"].get("uri"):
            seen["author_id"] = st["account"]["uri"]
        if status_text(st):
            seen["text"] = status_text(st)
        seen["url"] = st.get("url") or st["uri"]
        if st.get("language"):
            seen["lang"] = st["language"].lower()
        seen["published_at"] = st["created_at"]
        if st.get("edited_at"):
            seen["edited_at"] = st["edited_at"]
        parent = parent_of(st)
        if parent is not None:
            seen["reply_to"] = parent["uri"]
            root, chain = parent, 0
            while root.get("in_reply_to_id") and chain < 4096:
                up = parent_of(root)
                if up is None:
                    root = None
                    break
                root, chain = up, chain + 1
            if root is not None:
                seen["thread_id"] = root["uri"]
        links = status_links(st)
        if links:
            seen["links"] = links
        public = st.get("visibility") == "public" and not st.get("reblog")
        own_reply = st.get("in_reply_to_account_id") in (None, st["account"]["id"])
        out.append({
            "status_id": st["id"],
            "public_stream": public and own_reply,
            "home_tags": sorted({t["name"].lower() for t in st.get("tags") or []}) if public else [],
            "seen": seen,
        })
    with open("expected-" + group + ".jsonl", "w", encoding="utf-8") as f:
        for e in out:
            f.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    for g, d in GROUPS.items():
        expect(g, d)
