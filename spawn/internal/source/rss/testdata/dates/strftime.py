#!/usr/bin/env python3
"""Writes strftime.tsv: dates as a localized strftime writes them in feeds
("%a, %d %b %Y %H:%M:%S %z" under a French or Portuguese locale gives
"mer., 16 nov. 2022 08:00:00 +0100"), for every month in the main European
languages, each with the instant it names. The day and month names are read
from glibc's locale sources (/usr/share/i18n/locales, LC_TIME abday, day,
abmon, mon, alt_mon), not from the Go code under test; the formatting is
strftime's (%a %A %b %B %d %e %Y %H %M %S %z, plus %p on a 12-hour clock).

Run it from this directory on a machine with glibc's locale sources:
python3 strftime.py
"""

import re
from datetime import datetime, timedelta, timezone

LOCALES = ["en_US", "fr_FR", "de_DE", "es_ES", "pt_PT", "pt_BR", "it_IT", "nl_NL", "sv_SE", "da_DK", "nb_NO",
           "fi_FI", "pl_PL", "cs_CZ", "ro_RO", "hu_HU", "ca_ES", "el_GR", "ru_RU", "tr_TR"]

FORMATS = [
    "%a, %d %b %Y %H:%M:%S %z",   # RFC 822 through a localized strftime
    "%A, %d %B %Y %H:%M",         # no zone: read as UTC
    "%e %B %Y",                   # no time: midnight UTC
    "%a %d %b %Y %I:%M:%S %p",    # a 12-hour clock (%p as in English)
]


def lc_time(name):
    s = open("/usr/share/i18n/locales/" + name, encoding="utf-8").read()
    body = re.search(r"^LC_TIME\s*\n(.*?)^END LC_TIME", s, re.S | re.M).group(1)
    body = re.sub(r"/\n\s*", "", body)
    out = {}
    for line in body.split("\n"):
        parts = line.strip().split(None, 1)
        if not parts or parts[0].startswith("%"):
            continue
        key, value = parts[0], parts[1] if len(parts) > 1 else ""
        if key == "copy":
            for k, v in lc_time(value.strip('"')).items():
                out.setdefault(k, v)
        elif key in ("abday", "day", "abmon", "mon", "alt_mon"):
            names = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
            out[key] = [re.sub(r"<U([0-9A-Fa-f]{4,8})>", lambda m: chr(int(m.group(1), 16)), n) for n in names]
    return out


def render(fmt, t, names):
    wday = (t.weekday() + 1) % 7  # glibc lists Sunday first
    off = t.utcoffset()
    sign = "-" if off < timedelta(0) else "+"
    mins = abs(int(off.total_seconds())) // 60
    repl = {
        "%a": names["abday"][wday], "%A": names["day"][wday],
        "%b": names["abmon"][t.month - 1], "%B": names["mon"][t.month - 1],
        "%d": "%02d" % t.day, "%e": "%d" % t.day, "%Y": "%04d" % t.year,
        "%H": "%02d" % t.hour, "%I": "%02d" % ((t.hour + 11) % 12 + 1), "%p": "AM" if t.hour < 12 else "PM",
        "%M": "%02d" % t.minute, "%S": "%02d" % t.second, "%z": "%s%02d%02d" % (sign, mins // 60, mins % 60),
    }
    return re.sub(r"%[aAbBdeYHIpMSz]", lambda m: repl[m.group(0)], fmt)


def main():
    with open("strftime.tsv", "w", encoding="utf-8") as f:
        f.write("# locale\tformat\tdate\tinstant (RFC 3339)\n")
        for loc in LOCALES:
            names = lc_time(loc)
            for month in range(1, 13):
                zone = timezone(timedelta(hours=(month % 5) - 2))
                t = datetime(2021, month, min(28, 3 + 2 * month), (5 * month) % 24, 7 * month % 60, 30, tzinfo=zone)
                for fmt in FORMATS:
                    text = render(fmt, t, names)
                    want = t
                    if "%z" not in fmt:
                        want = t.replace(tzinfo=timezone.utc)
                    if "%S" not in fmt:
                        want = want.replace(second=0)
                    if "%H" not in fmt and "%I" not in fmt:
                        want = want.replace(hour=0, minute=0)
                    f.write("%s\t%s\t%s\t%s\n" % (loc, fmt, text, want.isoformat()))


if __name__ == "__main__":
    main()
