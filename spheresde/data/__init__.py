"""Training the Transformer classifier of the paper's Figure 2, and the image data it is
trained on (read locally: nothing is downloaded).

The model itself, and its theory, are :mod:`spheresde.transformer`.
"""

from ._classifier import ClassifierEvaluation as ClassifierEvaluation
from ._classifier import TransformerClassifier as TransformerClassifier
from ._classifier import classifier_loss as classifier_loss
from ._classifier import classifier_optimizer as classifier_optimizer
from ._classifier import evaluate_classifier as evaluate_classifier
from ._classifier import evaluate_classifiers as evaluate_classifiers
from ._classifier import init_values as init_values
from ._classifier import stack_runs as stack_runs
from ._classifier import train_epoch as train_epoch
from ._classifier import train_epochs as train_epochs
from ._datasets import DatasetError as DatasetError
from ._datasets import ImageData as ImageData
from ._datasets import load_cifar10 as load_cifar10
from ._datasets import load_dataset as load_dataset
from ._datasets import load_digits as load_digits
from ._datasets import load_fashion_mnist as load_fashion_mnist
from ._datasets import patchify as patchify
from ._datasets import read_idx as read_idx
