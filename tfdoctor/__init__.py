"""tfdoctor: finds what in a machine and its environment will make TensorFlow slow or broken."""

__version__ = "0.1.0"
