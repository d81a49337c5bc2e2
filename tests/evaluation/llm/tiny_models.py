"""Tiny causal LMs with random weights, built in a test (nothing is downloaded): a character-level
GPT-2 folder (every printable ASCII character a token, plus a few JSON-ish multi-character
tokens the model may pick), and a tiny Llama written as a .gguf file with the gguf package
(a byte-level BPE vocabulary, so any text encodes)."""

from __future__ import annotations

import string
from pathlib import Path

# Multi-character tokens a random model may emit, so that the format mask is exercised on tokens
# that span several characters (and may leave the format half-way).
CHUNKS = ['{"', '":', '",', '"}', "true", "yes", "no", "<answer>", "</answer>", "  ", "\n"]


def char_level_gpt2(path: Path, *, seed: int = 0, positions: int = 1024) -> Path:
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["<unk>", "<eos>", *string.printable[:95], *CHUNKS]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>")
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(words), n_positions=positions, n_embd=16, n_layer=1,
                        n_head=2, bos_token_id=1, eos_token_id=1)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _byte_level_alphabet() -> list[str]:
    """GPT-2's byte-to-character table: the 256 characters a byte-level BPE starts from."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table, extra = dict.fromkeys(printable), 0
    for byte in range(256):
        if byte not in table:
            table[byte] = 256 + extra
            extra += 1
    for byte in printable:
        table[byte] = byte
    return [chr(table[byte]) for byte in range(256)]


def tiny_gguf(path: Path, *, seed: int = 0) -> Path:
    """A one-layer Llama (hidden size 16) with a byte-level vocabulary, as a GGUF file."""
    import gguf
    import numpy as np

    tokens = [*_byte_level_alphabet(), '{"', '":', "<eos>"]
    vocab, hidden, ffn, heads = len(tokens), 16, 32, 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(512)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (vocab - 1) + [3])  # the last one is a control token
    writer.add_token_merges(['{ "', '" :'])
    writer.add_eos_token_id(vocab - 1)
    writer.add_bos_token_id(vocab - 1)
    rng = np.random.default_rng(seed)

    def random(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.5).astype(np.float32))

    random("token_embd.weight", vocab, hidden)
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(hidden, np.float32))
    for part in ("q", "k", "v", "output"):
        random(f"blk.0.attn_{part}.weight", hidden, hidden)
    writer.add_tensor("blk.0.ffn_norm.weight", np.ones(hidden, np.float32))
    random("blk.0.ffn_gate.weight", ffn, hidden)
    random("blk.0.ffn_up.weight", ffn, hidden)
    random("blk.0.ffn_down.weight", hidden, ffn)
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    random("output.weight", vocab, hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
