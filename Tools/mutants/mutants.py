"""The mutant runner the Tools/mutants/*-mutants scripts share: breaks the code one way at a time,
rebuilds, runs the tests that must catch it, and reverts every file however it ends.

A mutant is (name, file, the text to replace, its replacement, the test filter that must fail).
"""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(command):
    return subprocess.run(command, cwd=ROOT, shell=True, executable="/bin/bash", capture_output=True, text=True)


def main(mutants, argv):
    wanted = set(argv[1:])
    results = []
    for name, path, old, new, tests in mutants:
        if wanted and name not in wanted:
            continue
        full = os.path.join(ROOT, path)
        original = open(full, encoding="utf-8").read()
        if original.count(old) != 1:
            results.append((name, tests, "MUTANT DOES NOT APPLY (the code changed: update the script)"))
            continue
        try:
            open(full, "w", encoding="utf-8").write(original.replace(old, new))
            # The test bundle and the command line the CLI tests run; not the doc snippets or the bench.
            build = run("swift build --product BuckiaPackageTests 2>&1 | tail -5; swift build --product buckia 2>&1 | tail -5")
            if "error:" in build.stdout:
                outcome = "does not compile (update the mutant): " + build.stdout.strip().splitlines()[-1]
            else:
                # Bounded: a mutant that makes a test hang is reported as such, not waited for.
                test = run(f"timeout 600 swift test --skip-build --filter '{tests}' 2>&1 | tail -3; echo \"status ${{PIPESTATUS[0]}}\"")
                if "status 124" in test.stdout:
                    outcome = "caught (the tests hung: timed out after 600 s)"
                else:
                    failed = "failed" in test.stdout or "error" in test.stdout.lower()
                    outcome = "caught" if failed else "NOT CAUGHT"
        finally:
            open(full, "w", encoding="utf-8").write(original)
        results.append((name, tests, outcome))
        print(f"{name}: {outcome}", flush=True)
    run("swift build --product BuckiaPackageTests; swift build --product buckia")
    print("\n| mutant | tests | result |\n|---|---|---|")
    for name, tests, outcome in results:
        print(f"| {name} | `{tests}` | {outcome} |")
    return 0 if all(outcome.startswith("caught") for _, _, outcome in results) else 1
