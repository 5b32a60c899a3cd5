"""What topogate knows of Kubernetes objects: kinds and their pod templates, the shapes of the
fields the analysis reads, a pod's identity, training jobs and their replica groups.
"""
