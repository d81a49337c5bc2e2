"""A tiny DeBERTa-v2 NLI model built on the spot, so tests never download weights."""

from evaluation.lib.metrics.entailment import find_entailment_index

WORDS = (
    "the crab cakes were incredible and service was slow food great quiet place cozy we "
    "loved it parking easy rooms clean staff friendly"
).split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def build_tiny_nli(directory, id2label, entailment_bias=0.0):
    """Save a 1-layer DeBERTa-v2 classifier and a word-level tokenizer to ``directory``."""
    # Imported here: torch and transformers take seconds to import, and every test process
    # collects the modules that import this one.
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        PreTrainedTokenizerFast,
    )

    vocab = {token: index for index, token in enumerate(SPECIALS + WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=64,
    )
    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        pad_token_id=0,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={label: index for index, label in id2label.items()},
    )
    model = DebertaV2ForSequenceClassification(config)
    entail = find_entailment_index(id2label)
    if entail is not None and entailment_bias:
        with torch.no_grad():
            model.classifier.bias[entail] += entailment_bias
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
