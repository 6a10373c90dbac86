"""Reads the Fresh Text builder's recorded answers with real API clients:
the judge of evals/fresh/build's fixtures (TestRecordedAnswersReadByRealClients).

usage:
  fresh_clients.py arxiv URL QUERY PAGE_SIZE MAX   arxiv.py's Client through the fake arXiv at URL
  fresh_clients.py atom FILE...                    each file strictly well-formed XML, then arxiv.py's parser
  fresh_clients.py logevents URL                   mwclient's list=logevents (its continuation) through the fake wiki
Writes one JSON object per line: a paper, a log event, or {"error": ...}.
"""

import json
import sys
from urllib.parse import urlsplit

import arxiv
from arxiv import _feed
from lxml import etree


def paper(r, source=""):
    return {
        "source": source,
        "entry_id": r.entry_id,
        "id": r.get_short_id(),
        "title": r.title,
        "summary": r.summary,
        "published": r.published.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "authors": [a.name for a in r.authors],
        "categories": r.categories,
        "primary_category": r.primary_category,
    }


def emit(obj):
    print(json.dumps(obj), flush=True)


def run_arxiv(url, query, page_size, max_results):
    client = arxiv.Client(page_size=int(page_size), delay_seconds=0, num_retries=0)
    client.query_url_format = url + "?{}"
    search = arxiv.Search(
        query=query,
        max_results=int(max_results),
        sort_by=arxiv.SortCriterion.SubmittedDate,
        sort_order=arxiv.SortOrder.Ascending,
    )
    try:
        for r in client.results(search):
            emit(paper(r))
    except arxiv.ArxivError as e:
        emit({"error": type(e).__name__, "message": str(e)})


def run_atom(files):
    strict = etree.XMLParser(resolve_entities=False, no_network=True, recover=False)
    for name in files:
        with open(name, "rb") as f:
            content = f.read()
        try:
            etree.fromstring(content, parser=strict)
        except etree.XMLSyntaxError as e:
            emit({"source": name, "error": "XMLSyntaxError", "message": str(e)})
            continue
        feed = _feed.parse(content)
        if feed.malformed:
            emit({"source": name, "error": "malformed", "message": str(feed.error)})
            continue
        emit({"source": name, "total": feed.header.total_results, "papers": len(feed.results)})
        for r in feed.results:
            emit(paper(r, name))


def run_logevents(url):
    import mwclient
    from mwclient.listing import List

    u = urlsplit(url)
    path = u.path.rsplit("/", 1)[0] + "/"
    site = mwclient.Site(u.netloc, path=path, scheme=u.scheme, do_init=False, force_login=False)
    # The builder asks for formatversion=2 with GET; mwclient's List pages
    # through the answers with the API's own continue objects.
    events = List(site, "logevents", "le", letype="create", lenamespace="0", ledir="newer", formatversion="2", format="json")
    try:
        for e in events:
            emit({"logid": e["logid"], "pageid": e["pageid"], "title": e["title"], "timestamp": e["timestamp"] and __import__("time").strftime("%Y-%m-%dT%H:%M:%SZ", e["timestamp"])})
    except mwclient.errors.APIError as e:
        emit({"error": "APIError", "message": str(e)})


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "arxiv":
        run_arxiv(*args)
    elif mode == "atom":
        run_atom(args)
    elif mode == "logevents":
        run_logevents(*args)
    else:
        sys.exit("fresh_clients.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
