"""The experience store: a round trip with the priors, merging without duplicates, recommendations
ranked by past success."""

from kopt.loop.experience import Store, entry_from_comparison


def _entry(**kw):
    e = dict(
        kernel_type="softmax",
        backend="triton",
        chip="H100",
        bottleneck="memory-bound",
        strategy="fuse-passes",
        hypothesis="one pass",
        outcome="keep",
        reason="improved",
        change_pct=-20.0,
        source="test",
    )
    return {**e, **kw}


def test_store_round_trip_and_priors(tmp_path):
    with Store(tmp_path / "x.sqlite") as st:
        assert st.stats()["priors"] > 10 and st.list() == []  # recommends on day one
        assert st.add(_entry()) and not st.add(_entry())  # no duplicates
        assert st.list()[0]["strategy"] == "fuse-passes" and st.search("one pass")[0]["outcome"] == "keep"
    with Store(tmp_path / "x.sqlite") as st:  # persisted
        assert len(st.list()) == 1 and st.stats()["by_outcome"] == {"keep": 1}


def test_store_merge_without_duplicates(tmp_path):
    with Store(tmp_path / "a.sqlite") as a:
        a.add(_entry())
        a.add(_entry(strategy="vector-width", outcome="discard", change_pct=0.1))
    with Store(tmp_path / "b.sqlite") as b:
        b.add(_entry())
        assert b.merge(tmp_path / "a.sqlite") == 1  # the shared entry and the priors are not copied twice
        assert len(b.list()) == 2


def test_recommend_ranks_by_past_success(tmp_path):
    with Store(tmp_path / "r.sqlite") as st:
        prior = [r["strategy"] for r in st.recommend("softmax", "triton", "H100", "memory-bound", n=10)]
        assert prior[0] == "fuse-passes"  # the table's order when nothing was tried
        for i in range(3):
            st.add(_entry(strategy="vector-width", outcome="keep", change_pct=-3.0 - i))
        for i in range(3):
            st.add(_entry(strategy="fuse-passes", outcome="discard", reason="tie", change_pct=0.1 * i))
        recs = st.recommend("softmax", "triton", "H100", "memory-bound", n=10)
        assert recs[0]["strategy"] == "vector-width" and (recs[0]["keeps"], recs[0]["tries"]) == (3, 3)
        fuse = next(r for r in recs if r["strategy"] == "fuse-passes")
        assert (fuse["keeps"], fuse["tries"]) == (0, 3) and recs.index(fuse) == len(recs) - 1


def test_an_untrusted_keep_is_tried_not_kept_in_the_store():
    """An adversary's override keep (a person's word, or an agent's) ranked its made-up strategy
    first as a keep; every keep the judge did not measure itself is a try, never a keep."""
    comp = {"version": "v1", "decision": "keep", "reason": "override", "per_class": [], "hypothesis": "h"}
    where = {"kernel_type": "softmax", "chip": "H100", "parent": "v0", "strategy": "s", "workspace": "w"}
    assert entry_from_comparison(comp, **where)["outcome"] == "keep"
    comp["untrusted"] = "untrusted: settled by hand"
    assert entry_from_comparison(comp, **where)["outcome"] == "untrusted-keep"
