#!/usr/bin/env python3
"""Writes expected-items.jsonl and expected-hits.jsonl: what a user must see
of the comment each recorded payload becomes, read off the payloads with
Python's own HTML parser, apart from the Go code under test.

Rules (docs/sources/hackernews.md, "What a comment keeps"):
  * text: the item's HTML as plain text, every entity decoded once, white
    space folded, a block element (<p>, <pre>, ...) separating words, an
    inline one (<i>, <a>, <code>, ...) not; a link whose shown text is its
    href or Hacker News's shortening of it ("https://a.b/c...") reads as the
    full href. A story, job or poll shows its title, a blank line, then its
    text, or its url when it has no text.
  * links: the story's url, then every http(s) href, in order, no repeats.
  * reply_to: the parent (a pollopt's poll); thread_id: the thread's root,
    found by following parents among the recorded items (none when a parent
    is not recorded); neither for an item that starts a thread.
  * deleted and dead items are not kept.
  * match: a word of the text, for the conformance crawler's query.

Run from this directory: python3 expected.py
"""
import json
import re
from datetime import datetime, timezone
from html.parser import HTMLParser

INLINE = set("a abbr b bdi bdo cite code data dfn em i kbd mark q s samp small span strong sub sup time u var del ins font tt big strike wbr".split())
HIDDEN = set("script style head template noscript iframe object svg math title".split())


def web_url(u):
    u = (u or "").strip()
    low = u.lower()
    if (low.startswith("http://") or low.startswith("https://")) and len(u) > len("https://"):
        return u
    return ""


class Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.links, self.anchor, self.skip = [], [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN:
            self.skip += 1
            self.out.append(" ")
            return
        if tag == "a":
            href = web_url(dict(attrs).get("href"))
            if href:
                self.links.append(href)
                self.anchor = (href, [])
                return
        if tag not in INLINE:
            self.out.append(" ")

    def handle_endtag(self, tag):
        if tag in HIDDEN:
            self.skip = max(0, self.skip - 1)
            self.out.append(" ")
            return
        if tag == "a" and self.anchor:
            href, parts = self.anchor
            shown = " ".join("".join(parts).split())
            full = shown == "" or shown == href or (shown.endswith("...") and href.startswith(shown[:-3]))
            self.out.append(href if full else "".join(parts))
            self.anchor = None
            return
        if tag not in INLINE:
            self.out.append(" ")

    def handle_data(self, data):
        if self.skip:
            return
        if self.anchor:
            self.anchor[1].append(data)
        else:
            self.out.append(data)


def plain(html):
    p = Text()
    p.feed(html or "")
    p.close()
    seen, links = set(), []
    for l in p.links:
        if l not in seen:
            seen.add(l)
            links.append(l)
    return " ".join("".join(p.out).split()), links


def content(typ, title, text, url):
    body, links = plain(text)
    if typ in ("comment", "pollopt"):
        return body, links
    head, _ = plain(title)
    u = web_url(url)
    if u:
        links = [u] + [l for l in links if l != u]
        if not body:
            body = u
    out = head
    if body:
        out = (out + "\n\n" if out else "") + body
    return out, links


def published(ts):
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def seen(id_, author, text, links, ts, up, root):
    s = {"id": "hn:%d" % id_, "author": author, "text": text, "url": "https://news.ycombinator.com/item?id=%d" % id_,
         "published_at": published(ts)}
    if up:
        s["reply_to"] = "hn:%d" % up
        if root:
            s["thread_id"] = "hn:%d" % root
    if links:
        s["links"] = links
    return s


def match_word(text):
    m = re.search(r"[A-Za-z]{3,}", text)
    return m.group(0).lower() if m else ""


def items():
    recs = [json.loads(l) for l in open("items.jsonl")]
    by_id = {r["item"]["id"]: r["item"] for r in recs}

    def up_of(it):
        return it.get("parent") or (it.get("poll") if it.get("type") == "pollopt" else 0) or 0

    def root_of(it):
        cur = it
        for _ in range(100):
            up = up_of(cur)
            if not up:
                return cur["id"]
            if up not in by_id:
                return 0
            cur = by_id[up]
        return 0

    with open("expected-items.jsonl", "w") as f:
        for r in recs:
            it = r["item"]
            if it.get("deleted") or it.get("dead"):
                f.write(json.dumps({"id": "hn:%d" % it["id"], "skip": "deleted" if it.get("deleted") else "dead"}) + "\n")
                continue
            text, links = content(it.get("type"), it.get("title"), it.get("text"), it.get("url"))
            up = up_of(it)
            s = seen(it["id"], it.get("by", ""), text, links, it["time"], up, root_of(it) if up else 0)
            f.write(json.dumps({"seen": s, "match": match_word(text)}, ensure_ascii=False) + "\n")


def hits():
    with open("expected-hits.jsonl", "w") as f:
        for l in open("hits.jsonl"):
            h = json.loads(l)["hit"]
            id_ = int(h["objectID"])
            if "comment" in h["_tags"]:
                text, links = content("comment", None, h.get("comment_text"), None)
                root = h.get("story_id") if h.get("story_id") != id_ else 0
                s = seen(id_, h["author"], text, links, h["created_at_i"], h["parent_id"], root)
            else:
                text, links = content("story", h.get("title"), h.get("story_text"), h.get("url"))
                s = seen(id_, h["author"], text, links, h["created_at_i"], 0, 0)
            f.write(json.dumps({"seen": s, "match": match_word(text)}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    items()
    hits()
