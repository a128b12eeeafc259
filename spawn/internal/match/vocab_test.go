package match

// The benchmarks' workload: realistic keywords and comment-length texts.

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// topics are single-word keywords people follow.
var topics = strings.Fields(`golang rust python java kotlin swift javascript typescript docker kubernetes
terraform ansible linux windows android iphone ipad macbook pixel galaxy tesla rivian ford toyota honda
bitcoin ethereum solana dogecoin nft blockchain crypto inflation recession mortgage housing rent wages
election senate congress parliament minister president governor mayor campaign ballot vote referendum
football soccer basketball baseball hockey tennis golf cricket rugby olympics marathon cycling formula1
netflix disney hbo spotify youtube tiktok instagram facebook twitter reddit twitch discord slack zoom
amazon google microsoft apple meta nvidia intel amd qualcomm samsung sony nintendo xbox playstation
climate wildfire hurricane earthquake flood drought heatwave snowstorm tornado tsunami volcano weather
vaccine covid pandemic flu measles cancer diabetes obesity nutrition fitness yoga meditation sleep
coffee tea beer wine whisky pizza burger sushi ramen tacos vegan keto barbecue chocolate cheese bread
paris london berlin madrid rome tokyo seoul beijing delhi mumbai sydney toronto chicago boston seattle
austin denver miami atlanta dallas houston phoenix detroit portland brooklyn manhattan california texas
florida ohio oregon nevada alaska hawaii canada mexico brazil argentina chile peru germany france spain
italy japan korea china india russia ukraine poland sweden norway finland denmark ireland scotland wales
startup layoffs ipo merger acquisition earnings dividend stocks bonds nasdaq dow sp500 fed ecb interest
privacy security ransomware phishing malware breach hacker password encryption vpn firewall cloud aws
azure gcp postgres mysql mongodb redis kafka cassandra elasticsearch graphql grpc rest api sdk llm gpt
chatgpt openai anthropic gemini llama copilot ai robotics drones satellites spacex nasa mars moon rocket
telescope astronomy physics chemistry biology genetics crispr neuroscience psychology economics history
music jazz rock hiphop rap country pop kpop concert festival album vinyl guitar piano drums orchestra
movie cinema oscars emmys grammys broadway theatre comedy podcast documentary anime manga comics novel
poetry library museum gallery painting sculpture photography fashion sneakers streetwear makeup skincare
travel airline airport hotel airbnb cruise camping hiking skiing surfing diving fishing hunting gardening
parenting school university college students teachers exams homework scholarship tuition graduation
jobs hiring remote office commute salary pension retirement insurance healthcare hospital nurse doctor
police court judge lawsuit verdict prison crime fraud scandal protest strike union immigration border`)

// qualifiers turn topics into two-word phrases.
var qualifiers = strings.Fields(`new best cheap local global open free smart green electric digital
public private urban rural national`)

// vocabulary returns n distinct keywords: topic words, then two-word
// phrases made of a qualifier and a topic ("electric tesla").
func vocabulary(n int) []string {
	out := make([]string, 0, n)
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] && len(out) < n {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, w := range topics {
		add(w)
	}
	for _, q := range qualifiers {
		for _, w := range topics {
			add(q + " " + w)
		}
	}
	for i := 0; len(out) < n; i++ {
		add(fmt.Sprintf("%s%d", topics[i%len(topics)], i/len(topics)))
	}
	return out
}

// filler are common words that are nobody's keyword.
var filler = strings.Fields(`the a an and or but so just really very today yesterday tonight this that
what who why how i you we they my our your is are was were be been have has had do does did can could
will would should must think know love hate want need see saw look looking read reading watch watching
about with without from into over under after before again still never always maybe thanks please lol
omg wow great good bad awesome terrible amazing weird funny sad happy people everyone nobody somebody
time day week year morning night life world thing things stuff news update thread post story`)

// texts returns n tweet-length texts of filler words with one to three
// vocabulary keywords each, some capitalised or hashtagged.
func texts(r *rand.Rand, vocab []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		kws := 1 + r.IntN(3)
		words := 22 + r.IntN(18)
		at := map[int]bool{}
		for range kws {
			at[r.IntN(words)] = true
		}
		for w := range words {
			if w > 0 {
				b.WriteByte(' ')
			}
			if at[w] {
				k := vocab[r.IntN(len(vocab))]
				switch r.IntN(4) {
				case 0:
					k = strings.ToUpper(k[:1]) + k[1:]
				case 1:
					k = "#" + k
				}
				b.WriteString(k)
			} else {
				b.WriteString(filler[r.IntN(len(filler))])
			}
			if r.IntN(8) == 0 {
				b.WriteString([]string{",", ".", "!", "?", ":"}[r.IntN(5)])
			}
		}
		out[i] = b.String()
	}
	return out
}
