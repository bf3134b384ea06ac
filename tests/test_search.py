"""find_skills ranks by words, not letters (protocol v3 §3): unit tests of the ranking itself.

The tool is driven through the real process in test_skills_as_written_e2e.py; the hit rate over a
large real corpus is ``python -m bench.find``."""

from __future__ import annotations

from harness_sidecar.resources.search import Index, SkillDoc, rank, stem, words


def names(docs, query):
    return [d.name for d in Index.build(docs).rank(query)]


DOCS = [
    SkillDoc("docx", "Create, edit and analyze Word documents with tracked changes and comments.", "anthropics skills"),
    SkillDoc("pptx", "Presentation creation, editing, and analysis. Use when working with slide decks.",
             "anthropics skills"),
    SkillDoc("xlsx", "Spreadsheet creation and formula recalculation; a workbook with charts.", "anthropics skills"),
    SkillDoc("pdf", "Extract text and tables from PDF files, fill forms, merge and split documents.",
             "anthropics skills"),
    SkillDoc("slack-gif-creator", "Make animated GIFs optimized for Slack.", "anthropics skills"),
    SkillDoc("brand-guidelines", "Apply the brand colors and typography to a presentation or a document.",
             "anthropics skills"),
]


def test_a_one_letter_word_matches_nothing_on_its_own():
    assert names(DOCS, "a") == [] and names(DOCS, "a b c") == []
    assert rank([(d.name, d.description) for d in DOCS], "a") == []


def test_the_exact_name_comes_first_even_inside_a_sentence():
    """'make a pptx': the skill named pptx was not among 20 results when letters were matched."""
    assert names(DOCS, "make a pptx")[0] == "pptx"
    assert names(DOCS, "I need the slack gif creator please")[0] == "slack-gif-creator"  # a run joined by '-'
    assert names(DOCS, "PPTX")[0] == "pptx"


def test_a_word_in_the_name_outweighs_the_same_word_in_a_description():
    docs = [SkillDoc("deck-notes", "Notes about a presentation."), SkillDoc("presentation", "Slides."),
            SkillDoc("presentation-tools", "Tools.")]
    assert names(docs, "presentation tools") == ["presentation-tools", "presentation", "deck-notes"]
    docs = [SkillDoc("alpha", "Write release notes."), SkillDoc("release-notes", "Write them.")]
    assert names(docs, "write release notes")[0] == "release-notes"


def test_words_match_whole_not_as_letters_inside_other_words():
    docs = [SkillDoc("grammar", "Check grammar."), SkillDoc("ram-usage", "Measure memory.")]
    assert names(docs, "ram") == ["ram-usage"]  # 'grammar' holds the letters, not the word


def test_simple_stemming_joins_inflections():
    assert stem("forms") == stem("form") and stem("testing") == stem("tests") == stem("test")
    assert stem("policies") == stem("policy") and stem("files") == stem("file")
    assert stem("debugging") == stem("debug") and stem("writing") == stem("write") and stem("builder") == stem("build")
    docs = [SkillDoc("webapp-testing", "Test local web applications with Playwright."), SkillDoc("other", "Other.")]
    assert names(docs, "test my web app") == ["webapp-testing"]


def test_a_description_beats_the_folder_and_the_folder_still_finds():
    docs = [SkillDoc("one", "Nothing to see.", "plugins kubernetes"), SkillDoc("two", "Deploy to Kubernetes.", "x")]
    assert names(docs, "kubernetes") == ["two", "one"]


def test_ties_keep_the_order_given_roots_first():
    docs = [SkillDoc("zeta", "Review code."), SkillDoc("alpha", "Review code."), SkillDoc("mid", "Review code.")]
    assert names(docs, "review code") == ["zeta", "alpha", "mid"]


def test_every_query_word_counts_more_than_one_word_many_times():
    docs = [SkillDoc("csv-tools", "CSV CSV CSV helpers."), SkillDoc("csv-to-chart", "Turn a CSV file into a chart.")]
    assert names(docs, "csv chart")[0] == "csv-to-chart"


def test_words_are_lower_case_runs_of_letters_and_digits():
    assert words("Make a PPTX, now! (v2_beta)") == ["make", "a", "pptx", "now", "v2", "beta"]


def test_two_words_written_apart_find_a_name_written_as_one():
    docs = [SkillDoc("webapp-testing", "Playwright for local apps."), SkillDoc("web-fonts", "Fonts for the web."),
            SkillDoc("clinicaltrials-database", "Query ClinicalTrials.gov."), SkillDoc("search", "Search files.")]
    assert names(docs, "test a web app")[0] == "webapp-testing"
    assert "clinicaltrials-database" in names(docs, "clinical trials search")[:2]


def test_inflections_of_a_name_word_find_it():
    docs = [SkillDoc("systematic-debugging", "Find root causes."), SkillDoc("mcp-builder", "Servers for MCP."),
            SkillDoc("verification-before-completion", "Evidence first."), SkillDoc("other", "Debug output.")]
    assert names(docs, "debug a failing test systematically")[0] == "systematic-debugging"
    assert names(docs, "build an MCP server")[0] == "mcp-builder"
    assert names(docs, "verify before saying it is done")[0] == "verification-before-completion"
