#!/usr/bin/env python3
"""Writes expected.json: what a user must see of every item of every feed in
this directory, read off the payloads with Python's own XML, JSON, HTML and
date libraries (independently of the Go code under test).

Each sample's character set is written below as read by eye from its bytes
(the encodings are what the feeds really are, whatever their labels say).
The rules applied are the product's, as the README states them:

  id        RSS guid, Atom id, JSON Feed id (trimmed; kept when at most 256
            bytes and printable), else the sha256 hex of the item's link,
            else of "title\\npublished\\nupdated"
  author    the item's author name (RSS author, dc:author, dc:creator,
            itunes:author: the name of "address (Name)", "Name (address)" or
            "Name <address>", else the text as written), else the feed's
  text      title and body (content, else description or summary) as text
            a reader sees: HTML tags dropped, entities decoded, blocks
            separating words, white space folded; JSON Feed's title,
            summary and content_text are plain text
  url       RSS's first <link>, Atom's first alternate link, JSON Feed url
  links     RSS <link>s and enclosures; Atom alternate, related, enclosure
            and via links; JSON Feed url, external_url, attachments; in
            order, without repeats, http(s) only
  published the item's date (RSS pubDate or dc:date, Atom published else
            updated, JSON Feed date_published else date_modified) in UTC;
            an item without one is published when first fetched (null here)
  lang      the feed's (JSON Feed: the item's) language tag, lowercased

Run it from this directory: python3 expect.py
"""

import email.utils
import hashlib
import html.parser
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

# file -> the character set its bytes are in (Python codec name).
SAMPLES = {
    "miniflux-no_encoding_ISO-8859-1.xml": "latin-1",
    "miniflux-encoding_ISO-8859-1.xml": "latin-1",
    "miniflux-encoding_WINDOWS-1251.xml": "cp1251",
    "miniflux-koi8r.xml": "koi8-r",
    "miniflux-utf8-incorrect-prolog.xml": "utf-8",
    "miniflux-invalid-prolog.xml": "utf-8",
    "miniflux-utf8.xml": "utf-8",
    "miniflux-rdf_UTF8.xml": "utf-8",
    "miniflux-urdu_UTF8.xml": "utf-8",
    "miniflux-small_atom.xml": "utf-8",
    "miniflux-large_atom.xml": "utf-8",
    "miniflux-large_rss.xml": "utf-8",
    "gofeed-atom10_feed_entry_content_xhtml_inline_markup.xml": "utf-8",
    "gofeed-atom10_feed_entry_content_xhtml_escaped_markup.xml": "utf-8",
    "gofeed-atom10_feed_entry_summary_xhtml_inline_markup.xml": "utf-8",
    "gofeed-atom10_feed_entry_title_xhtml_inline_markup.xml": "utf-8",
    "gofeed-atom10_feed_entry_link_multiple.xml": "utf-8",
    "gofeed-atom10_feed_entry_link_rel_enclosure.xml": "utf-8",
    "gofeed-atom10_feed_entry_author_multiple.xml": "utf-8",
    "gofeed-rss_channel_item_enclosure.xml": "utf-8",
    "gofeed-rss_channel_item_author_emailAndName.xml": "utf-8",
    "gofeed-rss_channel_item_author_nameAndEmail.xml": "utf-8",
    "gofeed-rdf_item_description_naked_markup.xml": "utf-8",
    "gofeed-rdf_item_links.xml": "utf-8",
    "gofeed-rdf_item_title_cdata_escaped_markup.xml": "utf-8",
    "gofeed-version_json_10.json": "utf-8",
    "gofeed-version_json_11.json": "utf-8",
    "gofeed-json11_full.json": "utf-8",
}

ATOM = "{http://www.w3.org/2005/Atom}"
DC = "{http://purl.org/dc/elements/1.1/}"
CONTENT = "{http://purl.org/rss/1.0/modules/content/}"
ITUNES = "{http://www.itunes.com/dtds/podcast-1.0.dtd}"
ATOM_LINK_RELS = {"alternate", "related", "enclosure", "via"}

# Elements whose content a reader never sees, and elements that do not
# separate words (the HTML rendering rules the product follows).
HIDDEN = {"script", "style", "head", "template", "noscript", "iframe", "object", "svg", "math", "title"}
INLINE = {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "mark", "q", "s",
          "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var", "del", "ins", "font", "tt",
          "big", "strike", "wbr"}


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN:
            self.out.append(" ")
            self.skip += 1
        elif tag not in INLINE:
            self.out.append(" ")

    def handle_startendtag(self, tag, attrs):
        if tag not in INLINE:
            self.out.append(" ")

    def handle_endtag(self, tag):
        if tag in HIDDEN:
            self.out.append(" ")
            self.skip = max(0, self.skip - 1)
        elif tag not in INLINE:
            self.out.append(" ")

    def handle_data(self, data):
        if self.skip == 0:
            self.out.append(data)


def fold(s):
    return " ".join(s.split())


def html_text(s):
    if not s:
        return ""
    p = _Text()
    p.feed(s)
    p.close()
    return fold("".join(p.out))


def join_text(title, body):
    if not body or body == title:
        return title
    if not title:
        return body
    return title + "\n" + body


def item_id(raw):
    raw = raw.strip()
    if len(raw.encode()) <= 256 and raw.isprintable():
        return raw
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()


def hash_id(s):
    return hashlib.sha256(s.encode()).hexdigest()


def web(u):
    u = (u or "").strip()
    return u if re.match(r"^https?://[^/?#\s]+", u) else ""


def dedupe(urls):
    out = []
    for u in map(web, urls):
        if u and u not in out:
            out.append(u)
    return out


def lang_tag(s):
    s = (s or "").strip().lower()
    if not s or len(s) > 35 or not re.fullmatch(r"[a-z0-9_-]+", s):
        return ""
    return s.replace("_", "-")


def rfc3339(d):
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def date(s):
    """An RSS (RFC 822) or Atom/JSON (RFC 3339) date in UTC, None without
    one."""
    s = (s or "").strip()
    if not s:
        return None
    try:
        d = email.utils.parsedate_to_datetime(s)
    except (TypeError, ValueError):
        d = datetime.fromisoformat(s)
    if d.year < 1990:
        return None
    return rfc3339(d)


def name_address(s):
    """The name in "address (Name)", "Name (address)" or "Name <address>",
    else the text as written."""
    s = (s or "").strip()
    address = r"[^\s@()<>]+@[^\s@()<>]+"
    for pattern, name in ((r"(%s)\s*\((.+)\)" % address, 2), (r"(.+?)\s*\((%s)\)" % address, 1),
                          (r"(.+?)\s*<(%s)>" % address, 1)):
        m = re.fullmatch(pattern, s)
        if m:
            return m.group(name).strip()
    return s


def text_of(el):
    return "" if el is None else "".join(el.itertext())


def xml_root(raw, codec):
    doc = raw.decode(codec)
    doc = doc.lstrip("\ufeff")
    doc = re.sub(r"^\s*<\?xml[^>]*\?>", "", doc)
    return ET.fromstring(doc), doc


def children(el, *names):
    return [c for c in el if c.tag in names]


def first(el, *names):
    for c in el:
        if c.tag in names:
            return c
    return None


def rss_items(root, doc):
    rss10 = "{http://purl.org/rss/1.0/}"
    rss09 = "{http://my.netscape.com/rdf/simple/0.9/}"
    ns = ""
    if root.tag.endswith("RDF"):
        ns = rss10 if root.find(rss10 + "item") is not None or root.find(rss10 + "channel") is not None else rss09
        channel, items = root.find(ns + "channel"), root.findall(ns + "item")
    else:
        channel = root.find("channel")
        items = channel.findall("item")
    lang = lang_tag(text_of(first(channel, ns + "language", DC + "language")))
    feed_author = ""
    for tag in ("managingEditor", "webMaster", DC + "author", DC + "creator", ITUNES + "author"):
        if first(channel, tag) is not None:
            feed_author = name_address(text_of(first(channel, tag)))
            break
    out = []
    for it in items:
        title = text_of(first(it, ns + "title", DC + "title"))
        links = [text_of(l).strip() or l.get("href", "") for l in children(it, ns + "link")]
        enclosures = [e.get("url", "") for e in children(it, "enclosure")]
        guid = text_of(first(it, "guid")).strip()
        pub = text_of(first(it, "pubDate", DC + "date"))
        body = html_text(text_of(first(it, CONTENT + "encoded"))) or html_text(text_of(first(it, ns + "description")))
        if guid:
            iid = item_id(guid)
        elif links and links[-1].strip():
            iid = hash_id(links[-1].strip())  # the parser keeps the last <link>
        elif title or pub:
            iid = hash_id(title + "\n" + pub.strip() + "\n")
        else:
            # The description as written (markup and all), as the
            # parser hands it over; these feeds have one item at most.
            m = re.search(r"<description>(.*?)</description>", doc, re.S)
            iid = hash_id((m.group(1).strip() if m else "") + "\n")
        author = ""
        for tag in ("author", DC + "author", DC + "creator", ITUNES + "author"):
            if first(it, tag) is not None:
                author = name_address(text_of(first(it, tag)))
                break
        out.append({
            "id": iid,
            "author": author or feed_author,
            "text": join_text(html_text(title), body),
            "url": web(links[0]) if links else "",
            "lang": lang,
            "published_at": date(pub),
            "links": dedupe(links + enclosures),
        })
    return out


def xhtml_text(el):
    """The text a reader sees of an XHTML element's content."""
    out = [el.text or ""]
    for c in el:
        tag = c.tag.rsplit("}", 1)[-1]
        if tag in HIDDEN:
            out.append(" ")
        elif tag in INLINE:
            out.append(xhtml_text(c))
        else:
            out.append(" " + xhtml_text(c) + " ")
        out.append(c.tail or "")
    return "".join(out)


def atom_text(el):
    """The text a reader sees of an Atom text construct: type text is
    plain text, html is HTML, xhtml is the XHTML inside its div."""
    if el is None:
        return ""
    kind = el.get("type", "text")
    if kind == "xhtml":
        div = first(el, "{http://www.w3.org/1999/xhtml}div")
        return fold(xhtml_text(div if div is not None else el))
    if kind == "html":
        return html_text(text_of(el))
    return fold(text_of(el))


def atom_raw(doc, el, tag):
    """What the parser hands over of a text construct, for the hash of an
    entry without id, link, title or date: its text, or for xhtml the
    markup inside the wrapping div as written in the payload."""
    if el is None:
        return ""
    if el.get("type") == "xhtml":
        m = re.search(r"<%s[^>]*>\s*<div[^>]*>(.*?)</div>\s*</%s>" % (tag, tag), doc, re.S)
        return m.group(1).strip()
    return text_of(el).strip()


def atom_items(root, doc):
    ns = ATOM if root.tag.startswith(ATOM) else ""
    lang = lang_tag(root.get("{http://www.w3.org/XML/1998/namespace}lang", ""))
    fa = root.find(ns + "author")
    feed_author = "" if fa is None else (text_of(fa.find(ns + "name")).strip() or text_of(fa.find(ns + "email")).strip())
    out = []
    for e in root.findall(ns + "entry"):
        title = atom_text(e.find(ns + "title"))
        body = atom_text(e.find(ns + "content")) or atom_text(e.find(ns + "summary"))
        links, url = [], ""
        for l in e.findall(ns + "link"):
            rel = l.get("rel", "alternate").lower()
            if rel in ATOM_LINK_RELS:
                links.append(l.get("href", ""))
            if rel == "alternate" and not url:
                url = l.get("href", "")
        pub = text_of(e.find(ns + "published")).strip()
        upd = text_of(e.find(ns + "updated")).strip()
        eid = text_of(e.find(ns + "id")).strip()
        raw_title = atom_raw(doc, e.find(ns + "title"), "title")
        if eid:
            iid = item_id(eid)
        elif url:
            iid = hash_id(url)
        elif raw_title or pub or upd:
            iid = hash_id(raw_title + "\n" + (pub or upd) + "\n" + upd)
        else:
            iid = hash_id(atom_raw(doc, e.find(ns + "summary"), "summary") + "\n" + atom_raw(doc, e.find(ns + "content"), "content"))
        a = e.find(ns + "author")
        author = "" if a is None else (text_of(a.find(ns + "name")).strip() or text_of(a.find(ns + "email")).strip())
        out.append({
            "id": iid,
            "author": author or feed_author,
            "text": join_text(title, body),
            "url": web(url),
            "lang": lang,
            "published_at": date(pub or upd),
            "links": dedupe(links),
        })
    return out


def json_items(doc):
    def author(authors, one):
        for a in (authors or []) + [one or {}]:
            if (a.get("name") or "").strip():
                return a["name"].strip()
        return ""

    feed_author = author(doc.get("authors"), doc.get("author"))
    out = []
    for it in doc.get("items", []):
        body = html_text(it.get("content_html", "")) or fold(it.get("content_text", "")) or fold(it.get("summary", ""))
        links = [it.get("url", ""), it.get("external_url", "")] + [a.get("url", "") for a in it.get("attachments") or []]
        out.append({
            "id": item_id(str(it["id"])),
            "author": author(it.get("authors"), it.get("author")) or feed_author,
            "text": join_text(fold(it.get("title", "")), body),
            "url": web(it.get("url") or it.get("external_url")),
            "lang": lang_tag(it.get("language") or doc.get("language")),
            "published_at": date(it.get("date_published") or it.get("date_modified")),
            "links": dedupe(links),
        })
    return out


def main():
    expected = {}
    for name, codec in SAMPLES.items():
        raw = open(name, "rb").read()
        if name.endswith(".json"):
            items = json_items(json.loads(raw.decode(codec)))
        else:
            root, doc = xml_root(raw, codec)
            items = atom_items(root, doc) if root.tag.endswith("feed") else rss_items(root, doc)
        expected[name] = items
    with open("expected.json", "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
