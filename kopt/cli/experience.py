"""`kopt experience ...`: the experience log (kopt.loop.experience)."""

from __future__ import annotations

import json


def cmd_experience(a) -> int:
    from kopt.loop.experience import ENTERED, Store, dumps

    with Store(a.db or None) as st:
        if a.exp == "add":
            entry = {k: getattr(a, k) for k in ENTERED}
            print("added" if st.add({**entry, "source": "manual"}) else "already there")
        elif a.exp == "recommend":
            rows = st.recommend(a.kernel_type, a.backend, a.chip, a.bottleneck, n=a.n)
            if a.json:
                print(json.dumps(rows, indent=1))
                return 0
            for i, r in enumerate(rows, 1):
                print(
                    f"{i}. {r['strategy']}: score {r['score']:.2f} ({r['keeps']} kept of {r['tries']} tried, {r['basis']}; "
                    f"{r['keeps_everywhere']}/{r['tries_everywhere']} everywhere): {r['idea']}"
                )
        elif a.exp == "search":
            print(dumps(st.search(a.text)))
        elif a.exp == "list":
            print(dumps(st.list(limit=a.limit, include_priors=a.priors)))
        elif a.exp == "merge":
            print(f"merged {st.merge(a.other)} new entries from {a.other} into {st.path}")
        elif a.exp == "stats":
            print(json.dumps({"store": str(st.path), **st.stats()}, indent=1))
    return 0
