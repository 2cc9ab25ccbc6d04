rule settings:
    """A rule's settings as a file it declares as input: rewritten when they change."""
    input:
        settings_in_effect,
    output:
        json="results/settings/{name}.json",
    log:
        "results/logs/settings/{name}.log",
    wildcard_constraints:
        name="|".join(SETTING_VALUES),
    localrule: True
    run:
        from kopt.workspace.settings import write

        write(output.json, SETTING_VALUES[wildcards.name])
        Path(log[0]).write_text(f"wrote {output.json}\n")


rule owner:
    """Whose results tree this is: checked before every run, `kopt status` and `kopt new`."""
    input:
        ref=REF,
        target=ws_file("target.yaml"),
    output:
        json="results/workspace.json",
    log:
        "results/logs/owner.log",
    localrule: True
    run:
        write_owner(
            output.json, log[0], name=WS.name, ref=input.ref, target=input.target
        )
