"""Issue 30, item 3: after the grammar refuses a sampled token, the grammar is given the
highest logits in slices rather than all 262,144 tokens of Gemma's vocabulary (llama.cpp
decodes each candidate it is given into a heap vector: 50-150 MB a pass, a run's peak
memory, left behind in the heap). The replies are the ones the whole-vocabulary pass
gives, token for token, greedy and sampled."""

from __future__ import annotations

import pytest

from sidecar.llm import sampling as sampling_module
from sidecar.llm.grammars import grammar_for
from sidecar.llm.llama_settings import LLAMA_INIT_LOCK, llama_settings
from sidecar.llm.types import ReplyShape, Sampling
from sidecar.llm.weights import find_local_model, resolve_weights

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

DOCUMENT = (
    "## Scene\nLocation: The Drowned Lantern, a tavern by the harbour.\n"
    "Present: npc_1 (Edda, the innkeeper), pc_1 (the player)\n\n"
    "## Events\n- A storm rattles the shutters.\n- npc_1 drops a tray of mugs.\n\n"
    "Event: the player asks npc_1 about the ship that sank last night.\nNarration:"
)
SHAPES = [ReplyShape("prose"), ReplyShape("line"), ReplyShape("decision", n_options=3)]
#: Greedy, and the profile's own sampling at a high temperature (more refusals).
SETTINGS = [Sampling(temperature=0.0), Sampling(temperature=1.2, top_k=40, repeat_penalty=1.1)]


@pytest.fixture(scope="module")
def llm():
    from sidecar.llm.voice_llama import VoiceLlama

    with LLAMA_INIT_LOCK:  # built as the sidecar builds it (sidecar/llm/local.py)
        model = VoiceLlama(resolve_weights(find_local_model()), **llama_settings(n_ctx=1024))
    yield model
    model.close()


def _reply(llm, shape: ReplyShape, sampling: Sampling, seed: int) -> tuple[str, int, int]:
    # Evaluated afresh each time: a prompt partly reused from the last call goes through
    # llama.cpp in other steps, whose last bits (flash attention) can tip a near-tie.
    llm.reset()
    llm.next_sampling = sampling
    llm.next_grammar = grammar_for(shape)
    tokens = llm.tokenize(DOCUMENT.encode(), add_bos=True)
    out = llm.create_completion(tokens, max_tokens=40, seed=seed)
    return str(out["choices"][0]["text"]), llm.last_sampler.refused, llm.last_sampler.widest


def test_sliced_grammar_passes_pick_what_the_whole_vocabulary_pass_picks(llm, monkeypatch) -> None:
    sliced, whole = [], []
    for shape in SHAPES:
        for sampling in SETTINGS:
            for seed in (1, 2, 3) if sampling.temperature > 0 else (1,):
                sliced.append(_reply(llm, shape, sampling, seed))
                with monkeypatch.context() as patch:
                    patch.setattr(sampling_module, "FIRST_SLICE", llm.n_vocab())
                    whole.append(_reply(llm, shape, sampling, seed))
    assert [text for text, _, _ in sliced] == [text for text, _, _ in whole]
    refusals = sum(refused for _, refused, _ in sliced)
    assert refusals >= 5, "the grammar refused too few sampled tokens to compare the two passes"
    assert all(widest == llm.n_vocab() for _, refused, widest in whole if refused)
    # The slices stayed small: the whole vocabulary is given only where too few allowed
    # tokens are among the highest logits.
    assert sum(1 for _, refused, widest in sliced if refused and widest < llm.n_vocab()) >= len(sliced) // 2


def test_a_slice_settles_the_pick_only_where_no_token_outside_it_could_be_picked() -> None:
    import numpy as np

    n = 262_144
    inf = float("-inf")
    ids = np.array([5, 6, 7, 8], dtype=np.intc)
    allowed_two = np.array([9.0, inf, 8.0, inf], dtype=np.single)  # the grammar refused 6 and 8
    greedy = sampling_module._Enough(Sampling(temperature=0.0, repeat_penalty=1.1, repeat_last_n=64), n)
    assert greedy(ids, allowed_two, floor=7.0)
    greedy.recent.extend([5, 7])  # both allowed tokens were just drawn: penalised, either could fall below 7
    assert not greedy(ids, allowed_two, floor=7.0)
    top_k = sampling_module._Enough(Sampling(temperature=0.8, top_k=3, min_p=0.0, repeat_penalty=1.0), n)
    assert not top_k(ids, allowed_two, floor=7.0)  # a third token from outside would be kept
    assert top_k(ids, np.array([9.0, 8.5, 8.0, inf], dtype=np.single), floor=7.0)
    min_p = sampling_module._Enough(Sampling(temperature=0.8, top_k=40, min_p=0.05, repeat_penalty=1.0), n)
    assert min_p(ids, allowed_two, floor=5.0)  # 9 - ln(20) = 6.0 > 5: all outside is cut
    assert not min_p(ids, allowed_two, floor=7.0)
    no_top_k = sampling_module._Enough(Sampling(temperature=0.8, top_k=0, min_p=0.0), n)
    assert not no_top_k(ids, np.full(4, 9.0, dtype=np.single), floor=0.0)
    raised = sampling_module._Enough(Sampling(temperature=0.0, repeat_penalty=0.9), n)
    assert not raised(ids, np.full(4, 9.0, dtype=np.single), floor=0.0)  # a penalty below 1 raises logits
