"""The tokenizer.json pipeline around the BPE model, as data: one small frozen class per supported
JSON `type` of each stage kind (`normalizers`, `pre_tokenizers`, `post_processors`, `decoders`).

Each class is built from its JSON object by `from_json`, which refuses an option it does not
implement with `UnsupportedTokenizerError` (naming the file and the field), and applies itself with
one method (`normalize`, `pre_tokenize`, `decode_chain`). A registry per stage kind maps the JSON
type to its class; `read_stages` turns a (possibly `Sequence`) JSON value into a list of stages.
Pure Python: the loaders build these objects, the front ends run them.
"""
