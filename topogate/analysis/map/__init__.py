"""The single map: every training job found, where its groups can land, which flows its doors
allow, and the facts the rules read; composed from placement, netpolicy and the proofs.
"""
