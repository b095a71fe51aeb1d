"""Which page an address names, for the comparison's page texts: the address without
its #fragment and without utm_* query parameters (a scraper reads the same page for
all of them). Shared by compare_reference.sh (sources.jsonl) and mock_judge.py."""
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def page_of(url):
    try:
        p = urlsplit(url)
    except ValueError:
        return url.split("#", 1)[0]
    q = [(k, v) for k, v in parse_qsl(p.query, keep_blank_values=True) if not k.lower().startswith("utm_")]
    return urlunsplit((p.scheme, p.netloc, p.path, urlencode(q) if q else "", ""))
