"""TG101-TG114: every training job's placement and doors agree.
"""
