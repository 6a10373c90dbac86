package runner

// Unshare rewrites requests so that no prefix is shared: each branch becomes
// a request of its own carrying a copy of the prefix. Engines whose state
// cannot be shared between sequences (recurrent models) use it; Reshare maps
// the results back.
func Unshare(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		for _, b := range r.Branches {
			seq := make([]int32, 0, len(r.Prefix)+len(b.Tokens))
			seq = append(append(seq, r.Prefix...), b.Tokens...)
			out = append(out, Request{Branches: []Branch{{Tokens: seq, Positions: b.Positions}}})
		}
	}
	return out
}

// Reshare folds results of Unshare(reqs) back into the shape of reqs.
func Reshare(reqs []Request, flat []Result) []Result {
	out := make([]Result, len(reqs))
	k := 0
	for i, r := range reqs {
		out[i] = make(Result, len(r.Branches))
		for b := range r.Branches {
			out[i][b] = flat[k][0]
			k++
		}
	}
	return out
}
