"""Reading an install SOURCE: Git URLs with `@REF`, GitHub's `OWNER/REPO@REF`, local folders and repositories."""

import pytest

from mindroom.plugins.lock import PluginInstallError
from mindroom.plugins.sources import PluginSource, fetch, parse_source
from tests.git_repos import commit_files, git
from tests.plugins.git_http import git_host


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("acme/sizes", PluginSource("git", "https://github.com/acme/sizes.git")),
        ("acme/sizes@v1.2", PluginSource("git", "https://github.com/acme/sizes.git", "v1.2")),
        ("acme/sizes@release/1.2+b", PluginSource("git", "https://github.com/acme/sizes.git", "release/1.2+b")),
        ("sizes@main", PluginSource("git", "https://github.com/mindroom-ai/sizes.git", "main")),
        (
            "https://git.example.org/a/sizes.git@feature/x",
            PluginSource("git", "https://git.example.org/a/sizes.git", "feature/x"),
        ),
        ("https://user@git.example.org/a/sizes", PluginSource("git", "https://git.example.org/a/sizes")),
        ("git@github.com:acme/sizes.git", PluginSource("git", "git@github.com:acme/sizes.git")),
        ("git@github.com:acme/sizes.git@v2", PluginSource("git", "git@github.com:acme/sizes.git", "v2")),
    ],
)
def test_sources_remote_specs(tmp_path, spec, expected):
    assert parse_source(spec, tmp_path) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "a/b/c",
        "acme/../x",
        "acme/sizes@",
        "-acme/sizes",
        "acme/sizes@--upload-pack=touch",
        "acme/sizes@main~1",
        "acme/sizes@main^",
        "acme/sizes@v1..v2",
        "acme/sizes@v1 v2",
    ],
)
def test_sources_bad_specs_are_refused(tmp_path, spec):
    with pytest.raises(PluginInstallError):
        parse_source(spec, tmp_path)


@pytest.mark.parametrize(
    ("spec", "location", "ref", "credential"),
    [
        (
            "https://me:t%40ken@git.example.org/a/sizes.git@v1",
            "https://git.example.org/a/sizes.git",
            "v1",
            "me:t%40ken",
        ),
        ("http://token@127.0.0.1:8080/sizes.git", "http://127.0.0.1:8080/sizes.git", None, "token"),
        ("https://git.example.org/a/sizes@v1", "https://git.example.org/a/sizes", "v1", None),
        ("ssh://git@git.example.org/a/sizes.git", "ssh://git@git.example.org/a/sizes.git", None, None),
    ],
)
def test_sources_credentials_leave_the_location(tmp_path, spec, location, ref, credential):
    source = parse_source(spec, tmp_path)

    assert (source.location, source.ref, source.credential) == (location, ref, credential)
    assert credential is None or credential not in repr(source)


def test_sources_a_credential_with_a_control_character_is_refused_without_echoing_it(tmp_path):
    with pytest.raises(PluginInstallError, match="control character") as caught:
        parse_source("https://me:tok%0Ahost=evil@git.example.org/a/sizes.git", tmp_path)

    assert "tok" not in str(caught.value)


def test_sources_a_url_credential_never_reaches_another_port_of_the_same_host(tmp_path, monkeypatch):
    secret = "s3cret-t0ken"
    work = tmp_path / "work"
    commit_files(work, {"hooks.py": "one"}, "one")
    served = tmp_path / "served"
    served.mkdir()
    git(work, "clone", "-q", "--bare", str(work), str(served / "sizes.git"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))  # no helper of the machine's answers
    (tmp_path / "scratch").mkdir()

    # The URL's host sends git on to the same address at another port, which asks for credentials.
    with git_host(served, "deploy", secret) as other, git_host(served, "deploy", secret, other.url) as named:
        source = parse_source(named.url.replace("http://", f"http://deploy:{secret}@") + "/sizes.git", tmp_path)
        with pytest.raises(PluginInstallError, match="refused"):
            fetch(source, tmp_path / "scratch")

    assert other.expected not in other.authorizations


def test_sources_local_folder_and_repository(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")

    assert parse_source("plain", tmp_path) == PluginSource("folder", str(folder))
    assert parse_source(f"{repo}@v1", tmp_path) == PluginSource("git", str(repo), "v1")
    with pytest.raises(PluginInstallError, match="a plain folder has no refs"):
        parse_source("plain@v1", tmp_path)


def test_sources_fetch_pins_the_ref_and_exports_no_repository(tmp_path):
    repo = tmp_path / "repo"
    first = commit_files(repo, {"hooks.py": "one"}, "one")
    git(repo, "tag", "v1")
    (repo / "hooks.py").write_text("two")
    git(repo, "commit", "-q", "-am", "two")
    newest = git(repo, "rev-parse", "HEAD")

    (tmp_path / "a").mkdir()
    tagged = fetch(PluginSource("git", str(repo), "v1"), tmp_path / "a")
    (tmp_path / "b").mkdir()
    head = fetch(PluginSource("git", str(repo)), tmp_path / "b")
    (tmp_path / "c").mkdir()
    exact = fetch(PluginSource("git", str(repo), "main"), tmp_path / "c", commit=first)

    assert (tagged.commit, (tagged.tree / "hooks.py").read_text()) == (first, "one")
    assert (head.commit, (head.tree / "hooks.py").read_text()) == (newest, "two")
    assert (exact.commit, (exact.tree / "hooks.py").read_text()) == (first, "one")
    assert not (head.tree / ".git").exists()
    (tmp_path / "d").mkdir()
    with pytest.raises(PluginInstallError, match="ref 'v9' names no commit"):
        fetch(PluginSource("git", str(repo), "v9"), tmp_path / "d")
    (tmp_path / "e").mkdir()
    with pytest.raises(PluginInstallError, match="'--output=x' is not a branch, tag or commit name"):
        fetch(PluginSource("git", str(repo), "--output=x"), tmp_path / "e")
