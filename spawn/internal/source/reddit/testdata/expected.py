#!/usr/bin/env python3
"""Writes expected-things.jsonl and expected-info.jsonl: what a user must
see of the comment each recorded thing becomes, and what a re-check makes of
each recorded /api/info thing, read off the payloads apart from the Go code
under test.

Rules (docs/sources/reddit.md, "What a comment keeps"):
  * id "reddit:<fullname>"; author; author_id the author's fullname (t2_…)
    when Reddit sends it.
  * text: a comment's body as Reddit sends it with raw_json=1 (Markdown,
    unescaped); a post's title, then a blank line and its selftext when it
    has one.
  * url: https://www.reddit.com + permalink; a comment recorded before Reddit
    sent comments' permalinks gets /r/<sub>/comments/<post id>/_/<id>/.
  * links: a link post's target (url_overridden_by_dest, else url), then the
    http(s) URLs of the text in order, without repeats, trailing . , ; : ! ?
    * _ ~ cut.
  * published_at from created_utc; a comment's reply_to "reddit:<parent_id>"
    and thread_id "reddit:<link_id>".
  * a re-check takes a thing back (delete) when its author is "[deleted]" or
    its body (a post: selftext) is "[deleted]" or "[removed]", or a post's
    removed_by_category is set.

Run from this directory: python3 expected.py
"""
import json
import re
from datetime import datetime, timezone

URL = re.compile(r"https?://[^\s()<>\[\]\"']+")


def links(kind, d, text):
    out = []
    def add(u):
        u = u.rstrip(".,;:!?*_~")
        if u and u not in out:
            out.append(u)
    if kind == "t3" and not d.get("is_self"):
        if d.get("url_overridden_by_dest"):
            add(d["url_overridden_by_dest"])
        elif (d.get("url") or "").startswith("http"):
            add(d["url"])
    for u in URL.findall(text):
        add(u)
    return out


def seen(kind, d):
    if kind == "t1":
        text = d["body"]
    else:
        text = d["title"]
        if d.get("selftext", "").strip():
            text += "\n\n" + d["selftext"]
    if d.get("permalink"):
        url = "https://www.reddit.com" + d["permalink"]
    elif kind == "t1":
        url = "https://www.reddit.com/r/%s/comments/%s/_/%s/" % (d["subreddit"], d["link_id"][3:], d["id"])
    else:
        url = "https://www.reddit.com/r/%s/comments/%s/" % (d["subreddit"], d["id"])
    s = {"id": "reddit:" + d["name"], "author": d["author"], "text": text, "url": url,
         "published_at": datetime.fromtimestamp(d["created_utc"], timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if d.get("author_fullname"):
        s["author_id"] = d["author_fullname"]
    if kind == "t1":
        s["reply_to"] = "reddit:" + d["parent_id"]
        s["thread_id"] = "reddit:" + d["link_id"]
    l = links(kind, d, text)
    if l:
        s["links"] = l
    return s


def gone(kind, d):
    text = d.get("body") if kind == "t1" else d.get("selftext")
    return d.get("author") == "[deleted]" or text in ("[deleted]", "[removed]") or bool(kind == "t3" and d.get("removed_by_category"))


def main():
    with open("expected-things.jsonl", "w") as f:
        for line in open("things.jsonl"):
            t = json.loads(line)["thing"]
            f.write(json.dumps({"seen": seen(t["kind"], t["data"]), "subreddit": t["data"]["subreddit"].lower(),
                                "kind": t["kind"]}, ensure_ascii=False) + "\n")
    with open("expected-info.jsonl", "w") as f:
        for line in open("info.jsonl"):
            t = json.loads(line)["thing"]
            f.write(json.dumps({"id": "reddit:" + t["data"]["name"], "taken_back": gone(t["kind"], t["data"])}) + "\n")


if __name__ == "__main__":
    main()
