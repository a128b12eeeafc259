package rss

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// A feed's dates should be RFC 822 (RSS) or RFC 3339 (Atom), in English.
// Many are not: a feed written through a localized strftime says
// "Seg, 24 Set 2018 10:00:00 -0300" or "mer, 16 nov 2022 08:00:00 +0100",
// others "Sat, Dec 16 2023 02:02:33 PM" or "Friday, December 22, 2017 -
// 3:09pm". The feed parser reads the standard forms; readDate reads these:
// a month named in one of the main European languages (or as a number in
// an ISO date), a day, a year, a time of day on a 24- or 12-hour clock,
// and a zone (an offset, UT/GMT/Z, a common abbreviation, an IANA name).
// Weekday names and words between the parts ("at", "de", "um") are
// skipped. A date without a zone is read as UTC, and one without a time of
// day as midnight UTC.

// monthNames are the names and abbreviations of the months, January first,
// in the main European languages: those of glibc's locale data (LC_TIME
// mon, abmon, alt_mon and ab_alt_mon of en_US, fr_FR, de_DE, es_ES, pt_PT,
// pt_BR, it_IT, nl_NL, sv_SE, da_DK, nb_NO, fi_FI, pl_PL, cs_CZ, ro_RO,
// hu_HU, ca_ES, el_GR, ru_RU and tr_TR), lowercased, without a final dot or
// Catalan's "de"; plus the abbreviations of the Unicode CLDR where they
// differ (French "avr.", "sept." in English, German and Spanish). readDate
// also takes them without their accents.
var monthNames = map[string][12][]string{
	"en": {{"jan", "january"}, {"feb", "february"}, {"mar", "march"}, {"apr", "april"}, {"may"}, {"jun", "june"}, {"jul", "july"}, {"aug", "august"}, {"sep", "sept", "september"}, {"oct", "october"}, {"nov", "november"}, {"dec", "december"}},
	"fr": {{"janv", "janvier"}, {"févr", "février"}, {"mars"}, {"avr", "avril"}, {"mai"}, {"juin"}, {"juil", "juillet"}, {"août"}, {"sept", "septembre"}, {"oct", "octobre"}, {"nov", "novembre"}, {"déc", "décembre"}},
	"de": {{"jan", "januar"}, {"feb", "februar"}, {"mär", "märz"}, {"apr", "april"}, {"mai"}, {"jun", "juni"}, {"jul", "juli"}, {"aug", "august"}, {"sep", "sept", "september"}, {"okt", "oktober"}, {"nov", "november"}, {"dez", "dezember"}},
	"es": {{"ene", "enero"}, {"feb", "febrero"}, {"mar", "marzo"}, {"abr", "abril"}, {"may", "mayo"}, {"jun", "junio"}, {"jul", "julio"}, {"ago", "agosto"}, {"sep", "sept", "septiembre"}, {"oct", "octubre"}, {"nov", "noviembre"}, {"dic", "diciembre"}},
	"pt": {{"jan", "janeiro"}, {"fev", "fevereiro"}, {"mar", "março"}, {"abr", "abril"}, {"mai", "maio"}, {"jun", "junho"}, {"jul", "julho"}, {"ago", "agosto"}, {"set", "setembro"}, {"out", "outubro"}, {"nov", "novembro"}, {"dez", "dezembro"}},
	"it": {{"gen", "gennaio"}, {"feb", "febbraio"}, {"mar", "marzo"}, {"apr", "aprile"}, {"mag", "maggio"}, {"giu", "giugno"}, {"lug", "luglio"}, {"ago", "agosto"}, {"set", "settembre"}, {"ott", "ottobre"}, {"nov", "novembre"}, {"dic", "dicembre"}},
	"nl": {{"jan", "januari"}, {"feb", "februari"}, {"mrt", "maart"}, {"apr", "april"}, {"mei"}, {"jun", "juni"}, {"jul", "juli"}, {"aug", "augustus"}, {"sep", "september"}, {"okt", "oktober"}, {"nov", "november"}, {"dec", "december"}},
	"sv": {{"jan", "januari"}, {"feb", "februari"}, {"mar", "mars"}, {"apr", "april"}, {"maj"}, {"jun", "juni"}, {"jul", "juli"}, {"aug", "augusti"}, {"sep", "september"}, {"okt", "oktober"}, {"nov", "november"}, {"dec", "december"}},
	"da": {{"jan", "januar"}, {"feb", "februar"}, {"mar", "marts"}, {"apr", "april"}, {"maj"}, {"jun", "juni"}, {"jul", "juli"}, {"aug", "august"}, {"sep", "september"}, {"okt", "oktober"}, {"nov", "november"}, {"dec", "december"}},
	"nb": {{"jan", "januar"}, {"feb", "februar"}, {"mars"}, {"april"}, {"mai"}, {"juni"}, {"juli"}, {"aug", "august"}, {"sep", "september"}, {"okt", "oktober"}, {"nov", "november"}, {"des", "desember"}},
	"fi": {{"tammi", "tammikuu"}, {"helmi", "helmikuu"}, {"maalis", "maaliskuu"}, {"huhti", "huhtikuu"}, {"touko", "toukokuu"}, {"kesä", "kesäkuu"}, {"heinä", "heinäkuu"}, {"elo", "elokuu"}, {"syys", "syyskuu"}, {"loka", "lokakuu"}, {"marras", "marraskuu"}, {"joulu", "joulukuu"}},
	"pl": {{"sty", "styczeń", "stycznia"}, {"lut", "luty", "lutego"}, {"mar", "marca", "marzec"}, {"kwi", "kwiecień", "kwietnia"}, {"maj", "maja"}, {"cze", "czerwca", "czerwiec"}, {"lip", "lipca", "lipiec"}, {"sie", "sierpień", "sierpnia"}, {"wrz", "wrzesień", "września"}, {"paź", "październik", "października"}, {"lis", "listopad", "listopada"}, {"gru", "grudnia", "grudzień"}},
	"cs": {{"led", "leden", "ledna"}, {"úno", "únor", "února"}, {"bře", "březen", "března"}, {"dub", "duben", "dubna"}, {"kvě", "květen", "května"}, {"čen", "červen", "června"}, {"čec", "července", "červenec"}, {"srp", "srpen", "srpna"}, {"zář", "září"}, {"říj", "říjen", "října"}, {"lis", "listopad", "listopadu"}, {"pro", "prosince", "prosinec"}},
	"ro": {{"ian", "ianuarie"}, {"feb", "februarie"}, {"mar", "martie"}, {"apr", "aprilie"}, {"mai"}, {"iun", "iunie"}, {"iul", "iulie"}, {"aug", "august"}, {"sep", "septembrie"}, {"oct", "octombrie"}, {"nov", "noiembrie"}, {"dec", "decembrie"}},
	"hu": {{"jan", "január"}, {"febr", "február"}, {"márc", "március"}, {"ápr", "április"}, {"máj", "május"}, {"jún", "június"}, {"júl", "július"}, {"aug", "augusztus"}, {"szept", "szeptember"}, {"okt", "október"}, {"nov", "november"}, {"dec", "december"}},
	"ca": {{"gen", "gener"}, {"febr", "febrer"}, {"març"}, {"abr", "abril"}, {"maig"}, {"juny"}, {"jul", "juliol"}, {"ag", "agost"}, {"set", "setembre"}, {"oct", "octubre"}, {"nov", "novembre"}, {"des", "desembre"}},
	"el": {{"ιαν", "ιανουάριος", "ιανουαρίου"}, {"φεβ", "φεβρουάριος", "φεβρουαρίου"}, {"μάρ", "μαρ", "μάρτιος", "μαρτίου"}, {"απρ", "απρίλιος", "απριλίου"}, {"μάι", "μαΐ", "μάιος", "μαΐου"}, {"ιουν", "ιούν", "ιουνίου", "ιούνιος"}, {"ιουλ", "ιούλ", "ιουλίου", "ιούλιος"}, {"αυγ", "αύγ", "αυγούστου", "αύγουστος"}, {"σεπ", "σεπτέμβριος", "σεπτεμβρίου"}, {"οκτ", "οκτωβρίου", "οκτώβριος"}, {"νοέ", "νοε", "νοέμβριος", "νοεμβρίου"}, {"δεκ", "δεκέμβριος", "δεκεμβρίου"}},
	"ru": {{"янв", "январь", "января"}, {"фев", "февраль", "февраля"}, {"мар", "март", "марта"}, {"апр", "апрель", "апреля"}, {"май", "мая"}, {"июн", "июнь", "июня"}, {"июл", "июль", "июля"}, {"авг", "август", "августа"}, {"сен", "сентябрь", "сентября"}, {"окт", "октябрь", "октября"}, {"ноя", "ноябрь", "ноября"}, {"дек", "декабрь", "декабря"}},
	"tr": {{"oca", "ocak"}, {"şub", "şubat"}, {"mar", "mart"}, {"nis", "nisan"}, {"may", "mayıs"}, {"haz", "haziran"}, {"tem", "temmuz"}, {"ağu", "ağustos"}, {"eyl", "eylül"}, {"eki", "ekim"}, {"kas", "kasım"}, {"ara", "aralık"}},
}

// months maps every name of monthNames, and the same without its accents,
// to its month. No name means two months in the languages listed.
var months = func() map[string]time.Month {
	m := map[string]time.Month{}
	for _, names := range monthNames {
		for i, ns := range names {
			for _, n := range ns {
				m[n] = time.Month(i + 1)
				m[unaccent(n)] = time.Month(i + 1)
			}
		}
	}
	return m
}()

// zoneOffsets are the zone abbreviations feeds write, with their offsets
// in seconds east of UTC (RFC 822's, and Europe's).
var zoneOffsets = map[string]int{
	"ut": 0, "utc": 0, "gmt": 0, "z": 0, "wet": 0,
	"est": -5 * 3600, "edt": -4 * 3600, "cst": -6 * 3600, "cdt": -5 * 3600,
	"mst": -7 * 3600, "mdt": -6 * 3600, "pst": -8 * 3600, "pdt": -7 * 3600,
	"west": 3600, "bst": 3600, "cet": 3600, "cest": 2 * 3600, "met": 3600, "mest": 2 * 3600,
	"eet": 2 * 3600, "eest": 3 * 3600, "msk": 3 * 3600,
}

// dateToken is one piece of a date: a word, a number, a time of day, an
// offset or a separator.
type dateToken struct {
	text string // lowercased
	kind byte   // 'w' word, 'n' number, 't' h:mm[:ss], 'o' ±hh[:]mm offset, 's' separator
}

// particles are the words that join a date's day, month and year.
var particles = map[string]bool{"de": true, "d": true, "del": true, "of": true}

// The years readDate takes: a feed's date outside them is a mistake.
const (
	minDateYear = 1900
	maxDateYear = 2200
)

// maxDateBytes bounds what readDate reads: a date is short.
const maxDateBytes = 128

// readDate reads a date the feed parser could not: see the comment above
// monthNames. ok is false when the text does not say one date.
func readDate(s string) (time.Time, bool) {
	if len(s) > maxDateBytes || !utf8.ValidString(s) {
		return time.Time{}, false
	}
	s = strings.TrimSpace(s)
	if len(s) >= 9 && len(s) <= 10 && strings.Trim(s, "0123456789") == "" {
		// Unix seconds, as some feeds write them.
		n, _ := strconv.ParseInt(s, 10, 64)
		t := time.Unix(n, 0).UTC()
		return t, t.Year() >= minDateYear && t.Year() <= maxDateYear
	}
	toks := dateTokens(strings.ToLower(s))
	var (
		month                time.Month
		year, day            = -1, -1
		hour, minute, second = -1, 0, 0
		am, pm               bool
		loc                  *time.Location
	)
	// The month: a month's name, else a numeric year-month-day. A weekday
	// that shares its abbreviation with a month ("mar", Tuesday in French,
	// Spanish and Italian) comes first; the month is beside the day.
	monthAt := -1
	for i, t := range toks {
		if _, ok := months[unaccent(t.text)]; ok && t.kind == 'w' && (monthAt < 0 || monthAt == 0) {
			monthAt = i
		}
	}
	if monthAt >= 0 {
		month = months[unaccent(toks[monthAt].text)]
		// The day is the number beside the month (before it, or after it
		// when the month comes first), the year a four-digit number, else
		// a two-digit one after the month that is not the day.
		dayAt := -1
		for i, t := range toks {
			if t.kind != 'n' {
				continue
			}
			n, _ := strconv.Atoi(t.text)
			switch {
			case len(t.text) == 4 && year < 0:
				year = n
			case len(t.text) <= 2 && dayAt < 0 && n >= 1 && n <= 31 && beside(i, monthAt, toks):
				day, dayAt = n, i
			}
		}
		for i, t := range toks {
			if n, _ := strconv.Atoi(t.text); year < 0 && t.kind == 'n' && len(t.text) == 2 && i > monthAt && i != dayAt {
				year = 2000 + n
				if n >= 70 {
					year = 1900 + n
				}
			}
		}
	} else {
		var ok bool
		if year, month, day, ok = isoDate(toks); !ok {
			return time.Time{}, false
		}
	}
	// The time of day and the zone.
	for _, t := range toks {
		switch t.kind {
		case 't':
			if hour >= 0 {
				return time.Time{}, false // two times of day
			}
			var ok bool
			if hour, minute, second, ok = clock(t.text); !ok {
				return time.Time{}, false
			}
		case 'o':
			off, ok := offset(t.text)
			if !ok {
				return time.Time{}, false
			}
			if loc == nil || isUTC(loc) { // GMT+0200 is +0200
				loc = time.FixedZone("", off)
			}
		case 'w':
			w := strings.ReplaceAll(t.text, ".", "")
			if off, ok := zoneOffsets[w]; ok {
				if loc == nil {
					loc = time.FixedZone(strings.ToUpper(w), off)
				}
				continue
			}
			switch {
			case w == "am" || w == "pm":
				am, pm = w == "am", w == "pm"
			case strings.Contains(t.text, "/"):
				l, err := time.LoadLocation(zoneName(t.text))
				if err != nil {
					return time.Time{}, false // a zone this spawn cannot place
				}
				if loc == nil {
					loc = l
				}
			}
		}
	}
	switch {
	case year < minDateYear || year > maxDateYear || day < 1 || day > daysIn(month, year):
		return time.Time{}, false
	case hour < 0:
		hour, minute, second = 0, 0, 0
	case am || pm:
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if loc == nil {
		loc = time.UTC
	}
	return time.Date(year, month, day, hour, minute, second, 0, loc), true
}

// beside reports whether token i is next to the month, with only
// separators between them.
func beside(i, month int, toks []dateToken) bool {
	lo, hi := min(i, month), max(i, month)
	for j := lo + 1; j < hi; j++ {
		if toks[j].kind != 's' {
			return false
		}
	}
	return true
}

// dateTokens splits a lowercased date into tokens. Ordinal endings ("16th",
// "1er", "1º") and a day's German dot ("16.") stay off the number; a
// parenthesised remark ("(Coordinated Universal Time)") is skipped.
func dateTokens(s string) []dateToken {
	var out []dateToken
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				return out
			}
			i += end + 1
		case unicode.IsSpace(r):
			i += n
		case r == '+' || r == '-' && i+1 < len(s) && isDigit(s[i+1]) && precededByTime(out):
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == ':') {
				j++
			}
			out = append(out, dateToken{s[i:j], 'o'})
			i = j
		case isDigit(s[i]):
			j := i
			for j < len(s) && (isDigit(s[j]) || s[j] == ':') {
				j++
			}
			num := s[i:j]
			kind := byte('n')
			if strings.Contains(num, ":") {
				kind = 't'
				// a fraction of a second is dropped
				if j < len(s) && s[j] == '.' && j+1 < len(s) && isDigit(s[j+1]) {
					for j++; j < len(s) && isDigit(s[j]); j++ {
					}
				}
			}
			out = append(out, dateToken{num, kind})
			i = j
			// an ordinal ending or am/pm glued to the number
			k := i
			for k < len(s) {
				r, n := utf8.DecodeRuneInString(s[k:])
				if !unicode.IsLetter(r) && r != 'º' && r != 'ª' {
					break
				}
				k += n
			}
			switch suffix := s[i:k]; {
			case kind == 't' && (suffix == "am" || suffix == "pm"):
				out = append(out, dateToken{suffix, 'w'})
			case kind == 'n' && (suffix == "st" || suffix == "nd" || suffix == "rd" || suffix == "th" || suffix == "er" || suffix == "º" || suffix == "ª" || suffix == "o"):
			case suffix != "":
				out = append(out, dateToken{suffix, 'w'})
			}
			i = k
		case unicode.IsLetter(r):
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsLetter(r) && r != '/' && r != '_' && !(r == '.' && j+1 < len(s) && s[j+1] != ' ' && s[j+1] != ',' && isLetterAt(s, j+1)) {
					break
				}
				j += n
			}
			w := s[i:j]
			kind := byte('w')
			if particles[w] {
				kind = 's' // "24 de setembro de 2018", "11 d’abril", "the 4th of July"
			}
			out = append(out, dateToken{w, kind})
			i = j
			if i < len(s) && s[i] == '.' {
				i++ // an abbreviation's dot
			}
		default:
			out = append(out, dateToken{string(r), 's'})
			i += n
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetterAt(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r)
}

// precededByTime reports whether the tokens so far end with a time of day
// or a zone name (GMT-07:00): a '-' then starts an offset, not a range.
func precededByTime(toks []dateToken) bool {
	if len(toks) == 0 {
		return false
	}
	last := toks[len(toks)-1]
	return last.kind == 't' || last.kind == 'w' && (last.text == "gmt" || last.text == "utc" || last.text == "ut" || last.text == "am" || last.text == "pm")
}

// isoDate reads a numeric year-month-day ("2018-09-24", "2018/09/24"):
// the only numeric order that is not ambiguous.
func isoDate(toks []dateToken) (int, time.Month, int, bool) {
	for i := 0; i+4 < len(toks); i++ {
		y, s1, m, s2, d := toks[i], toks[i+1], toks[i+2], toks[i+3], toks[i+4]
		if y.kind != 'n' || len(y.text) != 4 || m.kind != 'n' || d.kind != 'n' || s1.kind != 's' || s1.text != s2.text || (s1.text != "-" && s1.text != "/") {
			continue
		}
		yy, _ := strconv.Atoi(y.text)
		mm, _ := strconv.Atoi(m.text)
		dd, _ := strconv.Atoi(d.text)
		if mm >= 1 && mm <= 12 {
			return yy, time.Month(mm), dd, true
		}
	}
	return 0, 0, 0, false
}

// clock reads h:mm or h:mm:ss.
func clock(s string) (h, m, sec int, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, false
	}
	var v [3]int
	for i, p := range parts {
		if len(p) == 0 || len(p) > 2 {
			return 0, 0, 0, false
		}
		v[i], _ = strconv.Atoi(p)
	}
	if v[0] > 23 || v[1] > 59 || v[2] > 60 {
		return 0, 0, 0, false
	}
	return v[0], v[1], min(v[2], 59), true
}

// offset reads ±hh, ±hhmm or ±hh:mm into seconds east of UTC.
func offset(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(s[1:], ":", "")
	var h, m int
	switch len(digits) {
	case 1, 2:
		h, _ = strconv.Atoi(digits)
	case 3, 4:
		h, _ = strconv.Atoi(digits[:len(digits)-2])
		m, _ = strconv.Atoi(digits[len(digits)-2:])
	default:
		return 0, false
	}
	if h > 14 || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}

func isUTC(l *time.Location) bool {
	_, off := time.Date(2000, 1, 1, 0, 0, 0, 0, l).Zone()
	return off == 0
}

// zoneName restores the case of an IANA zone name read lowercased
// ("europe/brussels" → "Europe/Brussels").
func zoneName(s string) string {
	b := []byte(s)
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '/' || c == '_' || c == '-'
	}
	return string(b)
}

// daysIn is the number of days of a month.
func daysIn(m time.Month, year int) int {
	if m < time.January || m > time.December {
		return 0
	}
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// unaccent drops the diacritics of the Latin and Greek letters of the
// month names, for feeds that write "fevrier" or "Marco".
func unaccent(s string) string {
	if isASCII([]byte(s)) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if base, ok := plainLetters[r]; ok {
			b.WriteRune(base)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainLetters maps a lowercase letter with a diacritic to its base letter.
var plainLetters = func() map[rune]rune {
	m := map[rune]rune{}
	for base, marked := range map[rune]string{
		'a': "áàâäãåăą", 'c': "çćč", 'd': "ď", 'e': "éèêëěę", 'g': "ğ", 'i': "íìîïı", 'l': "ł",
		'n': "ñńň", 'o': "óòôöõøő", 'r': "ř", 's': "śšşș", 't': "ťţț", 'u': "úùûüůű", 'y': "ýÿ", 'z': "źżž",
		'α': "ά", 'ε': "έ", 'η': "ή", 'ι': "ίϊΐ", 'ο': "ό", 'υ': "ύϋΰ", 'ω': "ώ",
	} {
		for _, r := range marked {
			m[r] = base
		}
	}
	return m
}()
