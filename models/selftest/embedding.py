# labels: test_group::selftest name::embedding author::turnkey task::Test license::mit
"""
A bag-of-words text classifier: nn.Embedding over int64 token ids, mean over the sequence, a
Linear head. Random weights. Written for turnkey's selftest corpus (an integer input).
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])
vocab_size = 1000


class EmbeddingClassifier(torch.nn.Module):
    def __init__(self, vocab_size, embedding_dim, num_classes):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab_size, embedding_dim)
        self.classifier = torch.nn.Linear(embedding_dim, num_classes)

    def forward(self, input_ids):
        return self.classifier(self.embedding(input_ids).mean(dim=1))


model = EmbeddingClassifier(vocab_size, 32, 4)
model.eval()
inputs = {
    "input_ids": torch.randint(0, vocab_size, (batch_size, max_seq_length), dtype=torch.int64),
}

with torch.no_grad():
    out = model(**inputs)
print("output shape:", tuple(out.shape))
